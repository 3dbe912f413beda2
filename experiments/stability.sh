#!/usr/bin/env bash
# Section 6.1: after mapping on a training sample (one eleventh of the URLs), the coefficient of
# variation of the imbalance factor over ten other samples (paper: 4.5% for 1D, 0.29% for 3D),
# once as they are and once with their page lengths drifted by -9%..+9%.
# Usage: experiments/stability.sh [records]   (default 1,250,000)
source "$(dirname "$0")/common.sh"
input=$(crawl "${1:-1250000}")
"$BIN" experiment stability --input "$input" --csv "$RESULTS/stability.csv"
gnuplot <<GP
set terminal pngcairo size 800,500
set output "$RESULTS/stability.png"
set datafile separator ","
set title "Coefficient of variation of the imbalance over ten samples"
set xlabel "machines"; set ylabel "CV (%)"; set logscale x 2; set key top left; set grid
plot for [d=1:3] "$RESULTS/stability.csv" using (strcol(1) eq "drifted_lengths" && \$3==d ? \$2 : 1/0):(100*\$7) with linespoints lw 2 title sprintf("%dD, drifted samples", d), \\
     for [d=1:3] "$RESULTS/stability.csv" using (strcol(1) eq "same_distribution" && \$3==d ? \$2 : 1/0):(100*\$7) with linespoints dt 2 title sprintf("%dD, same distribution", d)
GP
cat "$RESULTS/stability.csv"
