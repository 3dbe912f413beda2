#!/usr/bin/env bash
# Rebalancing a drifted store (issue 27): a generated crawl whose later pages are longer
# (gen-crawl --drift 1, text records, seed 7) is cut into A (first half), B and C (a quarter
# each). A then B run into an 8-shard store (exact routing); copies of it are rebalanced to 8 and
# to 10 shards (neardup rebalance --store: imbalance before and after, pages moved against the
# plan's estimate, seconds per million pages moved); C then runs on each, and on an unbalanced
# copy as the reference. Each store's groups are compared with the exact baseline of the whole
# crawl (REP, RER) and with the reference's, and neardup check must be clean. Last, adding a
# ninth shard by rebalancing against rebuilding A+B from scratch with 9 shards. D10 is the move to
# 10 shards deferred (rebalance --store --defer): C's run moves the pages between its batches.
# R48 grows the store to 48 shards, past what the map's whole cells can balance: cells are split
# (the whole-cell plan, a dry run with --no-reslice, is printed beside it).
# Usage: experiments/rebalance.sh [RECORDS]   (default 200000)
source "$(dirname "$0")/common.sh"
n=${1:-200000}
work="${TMPDIR:-/tmp}/neardup-rebalance-$n"
rm -rf "$work" && mkdir -p "$work"
out="$RESULTS/rebalance_$n.txt"
: > "$out"
say() { echo "$*" | tee -a "$out"; }
"$BIN" gen-crawl --pages "$n" --seed 7 --drift 1 --html-share 0 --out "$work/crawl.jsonl" --log-level warn
half=$((n / 2)); quarter=$((n / 4))
head -n "$half" "$work/crawl.jsonl" > "$work/A.jsonl"
sed -n "$((half + 1)),$((half + quarter))p" "$work/crawl.jsonl" > "$work/B.jsonl"
sed -n "$((half + quarter + 1)),\$p" "$work/crawl.jsonl" > "$work/C.jsonl"
secs() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$2"; }
now() { date +%s.%N; }

t0=$(now)
"$BIN" run --input "$work/A.jsonl" --store "$work/S8" --shards 8 --log-level warn | grep -E "^map " | sed 's/^/after A: /' | tee -a "$out"
"$BIN" run --input "$work/B.jsonl" --store "$work/S8" --log-level warn | grep -E "^map " | sed 's/^/after B: /' | tee -a "$out"
t1=$(now)
say "build A+B into 8 shards: $(secs "$t0" "$t1") s"
"$BIN" check --store "$work/S8" --log-level warn | grep -E "^imbalance" | sed 's/^/check S8: /' | tee -a "$out"

say "whole cells only, to 48 shards (dry run): $("$BIN" rebalance --store "$work/S8" --shards 48 --max-move 1 --no-reslice --dry-run --log-level warn | tail -1)"
for spec in "R8:8:0.2" "R10:10:0.4" "R9:9:0.3" "R48:48:1"; do
  IFS=: read -r name shards move <<< "$spec"
  cp -r "$work/S8" "$work/$name"
  t0=$(now)
  json=$("$BIN" rebalance --store "$work/$name" --shards "$shards" --max-move "$move" --log-level warn | tail -1)
  t1=$(now)
  say "rebalance to $shards shards (--max-move $move), $(secs "$t0" "$t1") s wall: $json"
  python3 - "$json" <<'PY' | tee -a "$out"
import json, sys
j = json.loads(sys.argv[1])
per_m = j["seconds"] / j["pages_moved"] * 1e6 if j["pages_moved"] else 0
print(f"  imbalance {j['imbalance_before']:.3f} -> {j['imbalance_after']:.3f}; cells split {j['cells_split']}, "
      f"pages relabelled {j['pages_relabelled']}; pages moved {j['pages_moved']} "
      f"(plan estimate {j['pages_estimated']:.0f}, {100 * (j['pages_moved'] / j['pages_estimated'] - 1):+.1f}%), "
      f"{j['bytes_moved'] / 1048576:.1f} MiB, {per_m:.1f} s per million pages moved")
PY
done

t0=$(now)
"$BIN" run --input "$work/A.jsonl" --store "$work/F9" --shards 9 --log-level warn > /dev/null
"$BIN" run --input "$work/B.jsonl" --store "$work/F9" --log-level warn > /dev/null
t1=$(now)
say "rebuild A+B from scratch with 9 shards: $(secs "$t0" "$t1") s (against the rebalance to 9 above)"

cp -r "$work/S8" "$work/U8"
cp -r "$work/S8" "$work/D10"
say "D10: $("$BIN" rebalance --store "$work/D10" --shards 10 --max-move 0.4 --defer --log-level warn | tail -1)"
for name in U8 R8 R10 D10 R48; do
  "$BIN" run --input "$work/C.jsonl" --store "$work/$name" --out "$work/$name-groups.jsonl" --log-level warn \
    | grep -E "^map |^records" | sed "s/^/$name after C: /" | tee -a "$out"
  if "$BIN" check --store "$work/$name" --log-level warn > "$work/$name-check.txt"; then
    say "$name check: clean ($(grep -E '^imbalance' "$work/$name-check.txt"))"
  else
    say "$name check: FAILED"; cat "$work/$name-check.txt" | tee -a "$out"
  fi
done
"$BIN" baseline --input "$work/crawl.jsonl" --threshold 0.9 --groups "$work/baseline.jsonl" --log-level warn > /dev/null
for name in U8 R8 R10 D10 R48; do
  say "$name vs exact baseline: $("$BIN" accuracy --groups "$work/$name-groups.jsonl" --baseline "$work/baseline.jsonl")"
  if cmp -s "$work/U8-groups.jsonl" "$work/$name-groups.jsonl"; then
    say "$name groups: identical to the unbalanced store's"
  else
    say "$name groups: DIFFER from the unbalanced store's"
  fi
done
