#!/usr/bin/env bash
# Fig. 5: share of page→shard sends avoided by 3D routing, shards 2..64, thresholds
# 0.5..0.9, for the paper's rho box (rho = 1) and for the exact L1 mode.
# Usage: experiments/fig5_communication.sh [records]   (default 1,250,000)
source "$(dirname "$0")/common.sh"
input=$(crawl "${1:-1250000}")
"$BIN" experiment communication --input "$input" --threads 1 --cache-dir "$VECTOR_CACHE" --csv "$RESULTS/fig5_communication.csv"
gnuplot <<GP
set terminal pngcairo size 1100,450
set output "$RESULTS/fig5_communication.png"
set datafile separator ","
set multiplot layout 1,2
set xlabel "shards"; set ylabel "communication avoided"; set yrange [0:1]; set key bottom right; set grid
do for [mode in "rho exact"] {
  set title sprintf("3D routing, %s mode", mode)
  plot for [t in "0.5 0.6 0.7 0.8 0.9"] "$RESULTS/fig5_communication.csv" \
    using (strcol(3) eq mode && abs(\$2 - t) < 1e-9 ? \$1 : 1/0):5 with linespoints title "threshold ".t
}
unset multiplot
GP
cat "$RESULTS/fig5_communication.csv"
