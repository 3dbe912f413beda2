#!/usr/bin/env bash
# Fig. 8: share of the changed pages of a recrawl that Tier 1 resolves on its own (still similar
# to their group's representative signature: no Tier 2 comparison), as the paper sets it up: a
# first crawl, then a second one 14 days later of as many records, about half of whose URLs were
# in the first (`neardup gen-crawl --second-crawl-overlap 0.5`). The first crawl is run into a
# store, then the second in seven parts on the same store (the paper's 2.5, 5, 10, 15, 20, 25 and
# 30 million of 30 million: 1/12 .. 12/12 of it); each part's `neardup run` summary gives its
# "tier 1 fast path F of C changed pages", summed up to that point.
# Usage: experiments/fig8_tier1_share.sh [records per crawl]   (default 200000)
# Writes experiments/results/fig8_tier1_share.csv and .png.
source "$(dirname "$0")/common.sh"
n="${1:-200000}"
work="${TMPDIR:-/tmp}/neardup-fig8-$n"
rm -rf "$work" && mkdir -p "$work"
"$BIN" gen-crawl --pages $((2 * n)) --seed 1 --second-crawl-overlap 0.5 --out "$work/crawls.jsonl" --log-level warn
head -n "$n" "$work/crawls.jsonl" > "$work/first.jsonl"
tail -n +"$((n + 1))" "$work/crawls.jsonl" > "$work/second.jsonl"
rm "$work/crawls.jsonl"
"$BIN" --log-level warn run --input "$work/first.jsonl" --store "$work/store" --out /dev/null > "$work/first.txt"
csv="$RESULTS/fig8_tier1_share.csv"
echo "second_crawl_records,share_of_second_crawl,changed,tier1_resolved,tier1_share,part_changed,part_tier1_resolved,part_tier1_share" > "$csv"
done_lines=0 changed=0 fast=0
for twelfths in 1 2 4 6 8 10 12; do
  upto=$((n * twelfths / 12))
  sed -n "$((done_lines + 1)),${upto}p" "$work/second.jsonl" > "$work/part.jsonl"
  "$BIN" --log-level warn run --input "$work/part.jsonl" --store "$work/store" --out /dev/null > "$work/part-$twelfths.txt"
  line=$(grep '^tier 1 fast path' "$work/part-$twelfths.txt") || { echo "no Tier 1 line in the summary of part $twelfths" >&2; exit 1; }
  read -r f c < <(echo "$line" | sed -n 's/^tier 1 fast path *\([0-9]*\) of \([0-9]*\) changed.*/\1 \2/p')
  [ -n "$c" ] || { echo "cannot read '$line'" >&2; exit 1; }
  fast=$((fast + f)) changed=$((changed + c)) done_lines=$upto
  awk -v r="$upto" -v n="$n" -v c="$changed" -v f="$fast" -v pc="$c" -v pf="$f" 'BEGIN {
    printf "%d,%.4f,%d,%d,%.4f,%d,%d,%.4f\n", r, r / n, c, f, c ? f / c : 0, pc, pf, pc ? pf / pc : 0 }' >> "$csv"
done
rm -f "$work/part.jsonl"
gnuplot <<GP
set terminal pngcairo size 800,500 noenhanced
set output "$RESULTS/fig8_tier1_share.png"
set datafile separator ","
set title "Fig. 8: changed pages of a recrawl resolved in Tier 1\n($n + $n records, half of the second crawl's URLs in the first)"
set xlabel "records of the second crawl processed"; set ylabel "% of changed pages similar to their group's signature"
set yrange [0:100]; set grid; set key bottom right
plot "$csv" using 1:(100*\$5) skip 1 with linespoints lw 2 pt 7 title "cumulative", \
     "$csv" using 1:(100*\$8) skip 1 with points pt 6 ps 1.5 title "each part alone"
GP
cat "$csv"
