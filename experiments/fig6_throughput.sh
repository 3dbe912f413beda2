#!/usr/bin/env bash
# Fig. 6: Tier 2 throughput (pages compared per second) as Tier 2 shards increase, 1D against 3D.
# Measured with real processes on this machine up to its cores: P `neardup tier2-server`
# processes (one work thread each, one shard each) behind `neardup run --shards P --tier2 ...`,
# the crawl fed in four parts on one store, each part's summary giving its Tier 2 pages, sends,
# comparison seconds, resident pages and shard imbalance (measured.csv). Simulated beyond: the
# per-shard cost model t = c0 + c1·m + c2·m·R fitted by least squares to those parts
# (`neardup experiment fig6-model`, experiments/throughput_model.h), applied to the imbalance and
# sends per page of 1D and 3D maps built for 2..64 shards from the same crawl (maps.csv).
# Usage: experiments/fig6_throughput.sh [records]   (default 200000)
# Writes experiments/results/fig6_measured.csv, fig6_maps.csv, fig6_throughput.csv, .png and .txt.
source "$(dirname "$0")/common.sh"
n="${1:-200000}"
cores=$(nproc)
work="${TMPDIR:-/tmp}/neardup-fig6-$n"
rm -rf "$work" && mkdir -p "$work"
input=$(crawl "$n")
parts=4
for k in $(seq 1 $parts); do
  sed -n "$(( (k - 1) * n / parts + 1 )),$(( k * n / parts ))p" "$input" > "$work/part-$k.jsonl"
done
measured="$RESULTS/fig6_measured.csv"
echo "shards,part,records,batches,pages,sends,resident,imbalance,seconds" > "$measured"
pids=()
stop_servers() { [ ${#pids[@]} -eq 0 ] || { kill "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true; }; pids=(); }
trap stop_servers EXIT
field() { sed -n "$1" "$2" | head -1; }
for shards in $(seq 1 "$cores"); do
  addresses=()
  for s in $(seq 0 $((shards - 1))); do
    "$BIN" --log-level warn tier2-server --store "$work/p$shards/tier2-$s" --listen 127.0.0.1:0 \
      --port-file "$work/p$shards-port-$s" --work-threads 1 --io-threads 1 & pids+=($!)
  done
  for s in $(seq 0 $((shards - 1))); do
    for _ in $(seq 1 100); do [ -s "$work/p$shards-port-$s" ] && break; sleep 0.1; done
    addresses+=("127.0.0.1:$(cat "$work/p$shards-port-$s")")
  done
  resident_before=0
  for k in $(seq 1 $parts); do
    summary="$work/p$shards-part-$k.txt"
    "$BIN" --log-level warn run --input "$work/part-$k.jsonl" --store "$work/p$shards/tier1" --out /dev/null \
      --shards "$shards" --tier2 "$(IFS=,; echo "${addresses[*]}")" > "$summary"
    batches=$(field 's/^batches *\([0-9]*\) .*/\1/p' "$summary")
    pages=$(field 's/^tier 2 *\([0-9]*\) pages compared.*/\1/p' "$summary")
    sends=$(field 's/^tier 2 .*, \([0-9]*\) page-shard sends.*/\1/p' "$summary")
    resident=$(field 's/^shards *\([0-9]*\) resident pages.*/\1/p' "$summary")
    imbalance=$(field 's/.*shard imbalance \([0-9.]*\).*/\1/p' "$summary")
    seconds=$(field 's/.*tier2 compare \([0-9.]*\) s.*/\1/p' "$summary")
    for v in batches pages sends resident imbalance seconds; do
      [ -n "${!v}" ] || { echo "no $v in the summary $summary" >&2; exit 1; }
    done
    echo "$shards,$k,$((n / parts)),$batches,$pages,$sends,$(( (resident_before + resident) / 2 )),$imbalance,$seconds" >> "$measured"
    resident_before=$resident
  done
  stop_servers
done
# The maps' shapes: imbalance and shards contacted per page at 2..64 shards, 1D and 3D, built
# from a quarter of the same crawl's URLs.
maps="$RESULTS/fig6_maps.csv"
echo "dims,shards,imbalance,sends_per_page" > "$maps"
for dims in 1 3; do
  echo "$dims,1,1,1" >> "$maps"
  for shards in 2 4 8 16 32 64; do
    "$BIN" --log-level warn partition build --input "$input" --dims "$dims" --shards "$shards" --sample-rate 0.25 \
      --out "$work/map.pb" --report "$work/report.json"
    imbalance=$(sed -n 's/.*"imbalance":\([0-9.e+-]*\).*/\1/p' "$work/report.json")
    contacted=$(sed -n 's/.*"mean_machines_contacted":\([0-9.e+-]*\).*/\1/p' "$work/report.json")
    echo "$dims,$shards,$imbalance,$contacted" >> "$maps"
  done
done
csv="$RESULTS/fig6_throughput.csv"
"$BIN" --log-level warn experiment fig6-model --measured "$measured" --maps "$maps" --csv "$csv" | tee "$RESULTS/fig6_throughput.txt"
gnuplot <<GP
set terminal pngcairo size 800,500
set output "$RESULTS/fig6_throughput.png"
set datafile separator ","
set title "Tier 2 throughput speed-up over one shard ($n records; measured up to $cores shards, simulated beyond)"
set xlabel "Tier 2 shards"; set ylabel "speed-up over one shard"; set logscale x 2; set grid; set key top left
plot "< grep ',simulated,' $csv | grep '^3,'" using 2:5 with linespoints lw 2 pt 7 title "3D, simulated", \
     "< grep ',simulated,' $csv | grep '^1,'" using 2:5 with linespoints lw 2 pt 5 title "1D, simulated", \
     "< grep ',measured,' $csv" using 2:5 with points pt 9 ps 2.5 lc rgb "black" title "3D, measured (processes)"
GP
cat "$csv"
