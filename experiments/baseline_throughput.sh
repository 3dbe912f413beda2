#!/usr/bin/env bash
# Baseline throughput and peak RSS on generated crawls of growing size.
#   bash experiments/baseline_throughput.sh [sizes...]   (default: 100000 1000000)
# Writes experiments/results/baseline_throughput.csv; crawls go to ${TMPDIR:-/tmp}.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/bin/neardup
[ -x "$bin" ] || bash scripts/build.sh release
sizes=("${@:-100000 1000000}")
[ $# -eq 0 ] && sizes=(100000 1000000)
out=experiments/results/baseline_throughput.csv
echo "records,threshold,seconds,records_per_s,read_sign_s,order_s,join_s,pairs,groups_2plus,peak_rss_mib" > "$out"
for n in "${sizes[@]}"; do
  crawl="${TMPDIR:-/tmp}/neardup-crawl-$n.jsonl"
  [ -f "$crawl" ] || "$bin" gen-crawl --pages "$n" --seed 1 --out "$crawl" --log-level warn
  log=$("$bin" baseline --input "$crawl" --threshold 0.9 --log-level warn 2>&1)
  echo "$log" | grep '^baseline:'
  line=$(echo "$log" | grep -E '^baseline: [0-9.]+s total')
  pairs=$(echo "$log" | sed -nE 's/.*: ([0-9]+) pairs, [0-9]+ groups \(([0-9]+) with.*/\1,\2/p')
  echo "$line" | sed -nE "s/^baseline: ([0-9.]+)s total \(read\+sign ([0-9.]+)s, order ([0-9.]+)s, join ([0-9.]+)s\), ([0-9]+) records\/s, peak RSS ([0-9.]+) MiB/$n,0.9,\1,\5,\2,\3,\4,$pairs,\6/p" >> "$out"
done
cat "$out"
