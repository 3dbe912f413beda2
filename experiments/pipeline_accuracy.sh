#!/usr/bin/env bash
# The embedded two-tier pipeline against the exact single-node baseline (the paper's Table 1 and
# Fig. 8): for each crawl size, `neardup run` (exact routing, 4 shards, batches of 1000) and
# `neardup baseline` on the same generated crawl (text records, seed 1), then REP and RER of the
# run's groups, the share of changed pages Tier 1 kept (Fig. 8), throughput and peak RSS.
# Usage: experiments/pipeline_accuracy.sh [sizes...]   (default 10000 100000 1000000)
source "$(dirname "$0")/common.sh"
sizes=("${@:-10000 100000 1000000}")
[ "$#" -gt 0 ] || sizes=(10000 100000 1000000)
csv="$RESULTS/pipeline_accuracy.csv"
echo "records,threshold,records_per_second,seconds,peak_rss_mib,fast_path_share,changed,rejection_rate,repairs,rep,rer,system_pairs,baseline_pairs" > "$csv"
t=0.9
for n in "${sizes[@]}"; do
  input="${TMPDIR:-/tmp}/neardup-text-crawl-$n.jsonl"
  [ -s "$input" ] || "$BIN" gen-crawl --pages "$n" --seed 1 --html-share 0 --out "$input" --log-level warn
  work="${TMPDIR:-/tmp}/neardup-pipeline-$n"
  rm -rf "$work" && mkdir -p "$work"
  "$BIN" run --input "$input" --threshold "$t" --store "$work/store" --out "$work/groups.jsonl" \
    --log-level warn | tee "$work/summary.txt"
  "$BIN" baseline --input "$input" --threshold "$t" --groups "$work/baseline.jsonl" --log-level warn > /dev/null
  acc=$("$BIN" accuracy --groups "$work/groups.jsonl" --baseline "$work/baseline.jsonl")
  echo "$acc"
  python3 - "$n" "$t" "$work/summary.txt" "$acc" >> "$csv" <<'PY'
import json, re, sys
n, t, path, acc = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
s = open(path).read()
num = lambda pat: float(re.search(pat, s).group(1))
rps = num(r": ([0-9.]+) records/s")
secs = num(r"in ([0-9.]+) s:")
rss = num(r"peak RSS ([0-9.]+) MiB")
fp = re.search(r"tier 1 fast path\s+(\d+) of (\d+)", s)
ver = re.search(r"verification\s+(\d+) checks(?: \([^)]*\))?, (\d+) rejections .*?, (\d+) repairs", s)
if fp is None or ver is None:
    sys.exit(f"pipeline_accuracy: {path} has no 'tier 1 fast path' or 'verification' line of the expected shape")
share = int(fp.group(1)) / max(1, int(fp.group(2)))
rej = int(ver.group(2)) / max(1, int(ver.group(1)))
print(f"{n},{t},{rps:.0f},{secs:.2f},{rss:.0f},{share:.4f},{fp.group(2)},{rej:.4f},{ver.group(3)},"
      f"{acc['rep']:.6f},{acc['rer']:.6f},{acc['system_pairs']},{acc['baseline_pairs']}")
PY
done
cat "$csv"
