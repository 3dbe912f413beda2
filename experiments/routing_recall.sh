#!/usr/bin/env bash
# Recall lost to routing: for rho 1.0..1.3 and the exact mode (3D, 64 shards, threshold 0.9),
# the share of the exact baseline's pairs whose partner lies in a cell the page was not
# routed to. Usage: experiments/routing_recall.sh [records] [threshold]   (default 1,000,000 0.9)
source "$(dirname "$0")/common.sh"
input=$(crawl "${1:-1000000}")
"$BIN" experiment recall --input "$input" --threshold "${2:-0.9}" --csv "$RESULTS/routing_recall.csv"
gnuplot <<GP
set terminal pngcairo size 800,500
set output "$RESULTS/routing_recall.png"
set datafile separator ","
set title "Pairs lost to routing (3D, 64 shards)"
set style data histograms; set style fill solid 0.6; set ylabel "share of baseline pairs lost (%)"; set grid y
plot "$RESULTS/routing_recall.csv" using (100*\$7):xticlabels(strcol(1) eq "exact" ? "exact" : sprintf("rho %.1f", \$2)) notitle
GP
cat "$RESULTS/routing_recall.csv"
