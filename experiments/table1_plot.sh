#!/usr/bin/env bash
# Table 1 as a figure: REP and RER (%) by milestone, one line per shard count (exact routing) and
# points for the rho box, beside the paper's 12-machine column. Reads table1_exact.csv and
# table1_rho.csv (written by experiments/table1_eval.sh, which runs this at its end); writes
# experiments/results/table1.png.
# Usage: experiments/table1_plot.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/install-deps.sh experiments >/dev/null
R=experiments/results
for f in "$R/table1_exact.csv" "$R/table1_rho.csv"; do
  [ -s "$f" ] || { echo "$f is missing: run experiments/table1_eval.sh first" >&2; exit 1; }
done
# The paper's Table 1, 12 machines: milestone share, REP %, RER %.
paper=$(mktemp)
trap 'rm -f "$paper"' EXIT
printf '0.1,0.8,1.3\n0.2,0.85,1.5\n0.3,0.9,1.55\n0.5,0.85,1.6\n0.75,1,1.67\n1,1.3,1.6\n' > "$paper"
# Columns: 1 milestone, 2 records, 3 shards, 4 routing, 13 rep, 14 rer.
gnuplot <<GP
set terminal pngcairo size 1000,450 noenhanced
set output "$R/table1.png"
set datafile separator ","
set multiplot layout 1,2 title "Table 1: relative error against the exact baseline (threshold 0.9, generated crawl)"
set xlabel "milestone (% of the crawl)"; set grid; set key top right; set xrange [0:105]; set yrange [-0.05:2.8]
rho = "$R/table1_rho.csv"
set ylabel "REP (%)"; set title "REP: pairs grouped that the baseline does not group"
plot "< grep ',4,exact,' $R/table1_exact.csv" using (100*\$1):(100*\$13) with linespoints lw 2 pt 7 title "4 shards, exact", \
     "< grep ',12,exact,' $R/table1_exact.csv" using (100*\$1):(100*\$13) with linespoints lw 2 pt 5 title "12 shards, exact", \
     "< grep ',24,exact,' $R/table1_exact.csv" using (100*\$1):(100*\$13) with linespoints lw 2 pt 9 title "24 shards, exact", \
     rho using (100*\$1):(100*\$13) skip 1 with points pt 6 ps 2 title "4 and 24 shards, rho 1.1", \
     "$paper" using (100*\$1):2 with linespoints dt 2 lw 2 pt 4 title "paper, 12 machines"
set ylabel "RER (%)"; set title "RER: baseline's grouped pairs the run misses"
plot "< grep ',4,exact,' $R/table1_exact.csv" using (100*\$1):(100*\$14) with linespoints lw 2 pt 7 title "4 shards, exact", \
     "< grep ',12,exact,' $R/table1_exact.csv" using (100*\$1):(100*\$14) with linespoints lw 2 pt 5 title "12 shards, exact", \
     "< grep ',24,exact,' $R/table1_exact.csv" using (100*\$1):(100*\$14) with linespoints lw 2 pt 9 title "24 shards, exact", \
     rho using (100*\$1):(100*\$14) skip 1 with points pt 6 ps 2 title "4 and 24 shards, rho 1.1", \
     "$paper" using (100*\$1):3 with linespoints dt 2 lw 2 pt 4 title "paper, 12 machines"
unset multiplot
GP
echo "wrote $R/table1.png"
