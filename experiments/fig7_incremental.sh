#!/usr/bin/env bash
# Fig. 7: time to take in the next 1% of pages incrementally (one Tier 2 shard: CompareBatch +
# fsync'ed Apply) against recomputing the whole collection from scratch with the baseline's exact
# all-pairs join (one thread each), as the collection grows 10k -> RESIDENT.
# Also writes the shard's throughput figures (bench tier2) to fig7_tier2_bench_t<threshold>.txt.
# Usage: experiments/fig7_incremental.sh [resident] [threshold]   (default 1000000 0.9)
source "$(dirname "$0")/common.sh"
resident="${1:-1000000}"
t="${2:-0.9}"
csv="$RESULTS/fig7_incremental_t$t.csv"
"$BIN" bench tier2 --resident "$resident" --batch 1000 --threshold "$t" --growth --csv "$csv" \
  --workdir "${TMPDIR:-/tmp}/neardup-fig7" --log-level warn | tee "$RESULTS/fig7_tier2_bench_t$t.txt"
gnuplot <<GP
set terminal pngcairo size 800,500
set output "$RESULTS/fig7_incremental_t$t.png"
set datafile separator ","
set title "Incremental vs from-scratch detection of the next 1% (threshold $t)"
set xlabel "resident pages"; set ylabel "from-scratch time / incremental time"; set logscale x; set grid
set key top left
plot "$csv" using 1:5 skip 1 with linespoints lw 2 title "speed-up of incremental", 1 with lines dt 2 title "break-even"
GP
cat "$csv"
