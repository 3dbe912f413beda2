#!/usr/bin/env bash
# Table 1: REP and RER against the exact baseline at milestones of a replayed crawl, per Tier 2
# shard count, with exact routing and with the paper's rho box beside it, plus the crawler's view
# (drop precision, redundancy, Tier 1 share, rejections, repairs): `neardup eval` on a generated
# crawl (seed 1); then table1_plot.sh draws results/table1.png.
# Usage: experiments/table1_eval.sh [records] [rho]   (default 200000 1.1)
source "$(dirname "$0")/common.sh"
n="${1:-200000}"
rho="${2:-1.1}"
input=$(crawl "$n")
# The rho box beside exact routing at two milestones and two shard counts (a run per shard count
# and a baseline per milestone: the whole grid again would double the script's time).
for routing in exact rho; do
  out="${TMPDIR:-/tmp}/neardup-eval-$n-$routing"
  milestones=10%,20%,30%,50%,75%,100% shards=4,12,24
  [ "$routing" = rho ] && milestones=50%,100% shards=4,24
  "$BIN" eval --input "$input" --milestones "$milestones" --shards "$shards" --threshold 0.9 \
    --routing "$routing" --rho "$rho" --out "$out" --log-level info | tee "$RESULTS/table1_${routing}.txt"
  cp "$out/eval.csv" "$RESULTS/table1_${routing}.csv"
  cp "$out/eval.json" "$RESULTS/table1_${routing}.json"
done
bash experiments/table1_plot.sh
