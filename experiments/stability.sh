#!/usr/bin/env bash
# Section 6.1: after mapping on a training dataset, the coefficient of variation of the imbalance
# factor over ten other datasets (paper: 4.5% for 1D, 0.29% for 3D), for 1D, 2D and 3D maps, the
# largest-first and the spread cell assignment, 2..64 shards. Two experiments:
#  - stability.csv: the map is built on one eleventh (by URL hash) of the crawl and judged on the
#    ten other elevenths, as they are ("same_distribution") and with sample k's page lengths
#    scaled by 0.91, 0.93, ..., 1.09 ("drifted_lengths");
#  - stability_epochs_d<D>.csv: the map is built on a crawl of epoch 0 and judged on ten later
#    crawl epochs 1..10 (gen-crawl --epoch e --length-drift D: new pages, and per epoch the length
#    spikes' weights move by exp(+-D) and the body's median length by exp(D/2)); D = 0 gives ten
#    fresh crawls of the same distribution.
# Usage: experiments/stability.sh [records] [epoch records] [drifts] [cells per shard]
#        (default 1,250,000; 500,000; "0.02"; 6). With cells per shard other than 6 the files
#        are named stability_cpm<C>*.csv / .png. Epoch crawls are kept in $EPOCH_DIR (default $TMPDIR
#        or /tmp), the signed length vectors in $VECTOR_CACHE (see common.sh).
source "$(dirname "$0")/common.sh"
input=$(crawl "${1:-1250000}")
n=${2:-500000}
drifts=${3:-0.02}
cpm=${4:-6}
name=stability
[ "$cpm" = 6 ] || name=stability_cpm$cpm
dir=${EPOCH_DIR:-${TMPDIR:-/tmp}}
common=(--threads 1 --cache-dir "$VECTOR_CACHE" --assignments largest-first spread --cells-per-shard "$cpm"
        --log-level warn)
# epoch E D: prints the path of the crawl of epoch E with drift D (seed E + 1), made once.
epoch() {
  local path="$dir/epoch_d$2_${n}_e$1.jsonl"
  [ "$1" = 0 ] && path="$dir/epoch_${n}_e0.jsonl"
  [ -s "$path" ] || "$BIN" gen-crawl --pages "$n" --seed $(($1 + 1)) --epoch "$1" --length-drift "$2" \
    --html-share 0 --out "$path" --log-level warn >&2
  echo "$path"
}
"$BIN" experiment stability --input "$input" --kinds same_distribution drifted_lengths "${common[@]}" \
  --csv "$RESULTS/$name.csv"
for d in $drifts; do
  train=$(epoch 0 "$d")
  tests=()
  for e in 1 2 3 4 5 6 7 8 9 10; do tests+=("$(epoch "$e" "$d")"); done
  "$BIN" experiment stability --input "$train" --epoch-inputs "${tests[@]}" --kinds crawl_epochs "${common[@]}" \
    --csv "$RESULTS/${name}_epochs_d$d.csv"
done
last=$(echo $drifts | awk '{print $NF}')
gnuplot <<GP
set terminal pngcairo size 1500,500
set output "$RESULTS/$name.png"
set termoption noenhanced
set datafile separator ","
set multiplot layout 1,3
set xlabel "shards"; set ylabel "CV of the imbalance (%)"; set logscale x 2; set key top left; set grid
f(file, kind, a, d) = sprintf("< awk -F, '\$1==\"%s\" && \$10==\"%s\" && \$3==%d' %s", kind, a, d, file)
do for [kind in "same_distribution drifted_lengths"] {
  set title sprintf("%s (elevenths of one crawl), $cpm cells per shard", kind)
  plot for [d=1:3:2] f("$RESULTS/$name.csv", kind, "largest-first", d) using 2:(100*\$7) with linespoints \
         lw 2 dt 2 title sprintf("%dD, largest-first", d), \
       for [d=1:3:2] f("$RESULTS/$name.csv", kind, "spread", d) using 2:(100*\$7) with linespoints \
         lw 2 title sprintf("%dD, spread", d)
}
set title "crawl epochs 1..10 (length drift $last per epoch), $cpm cells per shard"
plot for [d=1:3:2] f("$RESULTS/${name}_epochs_d$last.csv", "crawl_epochs", "largest-first", d) using 2:(100*\$7) \
       with linespoints lw 2 dt 2 title sprintf("%dD, largest-first", d), \
     for [d=1:3:2] f("$RESULTS/${name}_epochs_d$last.csv", "crawl_epochs", "spread", d) using 2:(100*\$7) \
       with linespoints lw 2 title sprintf("%dD, spread", d)
unset multiplot
GP
cut -d, -f1-12 "$RESULTS/$name.csv" "$RESULTS"/${name}_epochs_d*.csv
