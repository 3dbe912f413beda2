#!/usr/bin/env bash
# Section 6.1: after mapping on a training sample (one eleventh of the URLs), the coefficient of
# variation of the imbalance factor over ten other samples (paper: 4.5% for 1D, 0.29% for 3D).
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
plot for [d=1:3] "$RESULTS/stability.csv" using (\$2==d ? \$1 : 1/0):(100*\$6) with linespoints title sprintf("%dD", d)
GP
cat "$RESULTS/stability.csv"
