#!/usr/bin/env bash
# Table 1: REP and RER against the exact baseline at milestones of a replayed crawl, per Tier 2
# shard count, with exact routing and with the paper's rho box beside it, plus the crawler's view
# (drop precision, redundancy, Tier 1 share, rejections, repairs): `neardup eval` on a generated
# crawl (seed 1); then table1_plot.sh draws results/table1.png.
# Usage: experiments/table1_eval.sh [records] [rho]   (default 200000 1.1)
# Also the paper's other boxes, rho 1.0 and 1.3, at 100% and 4 shards (table1_rho1.0.*, table1_rho1.3.*).
source "$(dirname "$0")/common.sh"
n="${1:-200000}"
rho="${2:-1.1}"
input=$(crawl "$n")
# The rho box beside exact routing at two milestones and two shard counts (a run per shard count
# and a baseline per milestone: the whole grid again would double the script's time).
run() {  # NAME ROUTING RHO MILESTONES SHARDS
  local out="${TMPDIR:-/tmp}/neardup-eval-$n-$1"
  "$BIN" eval --input "$input" --milestones "$4" --shards "$5" --threshold 0.9 \
    --routing "$2" --rho "$3" --out "$out" --log-level info | tee "$RESULTS/table1_$1.txt"
  cp "$out/eval.csv" "$RESULTS/table1_$1.csv"
  cp "$out/eval.json" "$RESULTS/table1_$1.json"
}
run exact exact "$rho" 10%,20%,30%,50%,75%,100% 4,12,24
run rho rho "$rho" 50%,100% 4,24
for r in 1.0 1.3; do run "rho$r" rho "$r" 100% 4; done
bash experiments/table1_plot.sh
