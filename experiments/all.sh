#!/usr/bin/env bash
# Regenerates the whole experiments folder: every script at the sizes experiments/README.md
# quotes, one after the other, printing each one's wall time and the total (also appended to
# $TMPDIR/neardup-all.log). A script that fails is reported and the others still run; the exit
# status is 1 if any failed.
# Usage: experiments/all.sh [--list] [NAME...]   (NAME: run only the steps whose command contains it)
#   --list   print the steps and do nothing
# Generated crawls are made once and kept in $TMPDIR (see common.sh): a second run skips that.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
steps=(
  "experiments/baseline_throughput.sh"
  "experiments/fig4_imbalance.sh"
  "experiments/fig5_communication.sh"
  "experiments/stability.sh 1250000 500000 '0 0.02'"
  "experiments/stability.sh 1250000 500000 '0 0.02' 16"
  "experiments/routing_recall.sh 1000000 0.9"
  "experiments/fig6_throughput.sh 200000"
  "experiments/fig7_incremental.sh 1000000 0.9"
  "experiments/fig8_tier1_share.sh 200000"
  "experiments/table1_eval.sh 200000"
  "experiments/real_docs.sh"
  "experiments/rebalance.sh 200000"
  "experiments/cluster_rebalance.sh 200000"
  "experiments/pipeline_accuracy.sh 10000 100000 1000000"
  "experiments/service_bench.sh 1000000"
)
list=0
only=()
for a in "$@"; do
  case "$a" in
    --list) list=1 ;;
    -*) echo "usage: $0 [--list] [NAME...]" >&2; exit 2 ;;
    *) only+=("$a") ;;
  esac
done
log="${TMPDIR:-/tmp}/neardup-all.log"
failed=0
total_start=$(date +%s)
for step in "${steps[@]}"; do
  if [ ${#only[@]} -gt 0 ]; then
    hit=0
    for o in "${only[@]}"; do [[ "$step" == *"$o"* ]] && hit=1; done
    [ $hit = 1 ] || continue
  fi
  if [ $list = 1 ]; then echo "$step"; continue; fi
  start=$(date +%s)
  echo "== $step" | tee -a "$log"
  if nice -n 10 bash -c "bash $step" >> "$log" 2>&1; then status=ok; else status="FAILED (see $log)"; failed=1; fi
  echo "== $step: $(( $(date +%s) - start )) s, $status" | tee -a "$log"
done
[ $list = 1 ] && exit 0
echo "== all: $(( $(date +%s) - total_start )) s$([ $failed = 1 ] && echo ', with failures')" | tee -a "$log"
exit $failed
