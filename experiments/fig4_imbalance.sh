#!/usr/bin/env bash
# Fig. 4: load imbalance factor of 1D, 2D and 3D maps for 2..64 shards.
# Usage: experiments/fig4_imbalance.sh [records]   (default 1,250,000 records: > 1M resident pages)
source "$(dirname "$0")/common.sh"
input=$(crawl "${1:-1250000}")
"$BIN" experiment imbalance --input "$input" --threads 1 --cache-dir "$VECTOR_CACHE" --csv "$RESULTS/fig4_imbalance.csv"
gnuplot <<GP
set terminal pngcairo size 800,500
set output "$RESULTS/fig4_imbalance.png"
set datafile separator ","
set title "Load imbalance factor (max / mean pages per shard)"
set xlabel "shards"; set ylabel "imbalance factor"; set logscale x 2; set key top left; set grid
plot for [d=1:3] "$RESULTS/fig4_imbalance.csv" using (\$2==d && \$6 > 0.92 ? \$1 : 1/0):3 with linespoints lw 2 title sprintf("%dD", d), \\
     for [d=1:3] "$RESULTS/fig4_imbalance.csv" using (\$2==d && \$6 < 0.92 ? \$1 : 1/0):3 with linespoints dt 2 title sprintf("%dD, fine-grain ratio = threshold (paper)", d)
GP
cat "$RESULTS/fig4_imbalance.csv"
