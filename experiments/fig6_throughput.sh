#!/usr/bin/env bash
# Fig. 6: Tier 2 throughput (pages compared per second) as Tier 2 shards increase, 1D against 3D.
# Measured with real processes on this machine up to its cores: P `neardup tier2-server`
# processes (one work thread each, one shard each) behind `neardup run --shards P --tier2 ...`,
# the crawl fed in four parts (batches of 1000, 4000, 500 and 2000 records) on one store; each
# part's summary gives its Tier 2 pages, sends, resident pages and shard imbalance, and /proc the
# CPU seconds of the busiest Tier 2 server over the part (fig6_measured.csv; the Tier 2 wall time
# is kept beside it). Simulated beyond: the per-shard cost model t = c0 + c1·m + c2·m·R fitted by
# least squares to those parts (`neardup experiment fig6-model`, experiments/throughput_model.h),
# applied to the imbalance and sends per page of 1D and 3D maps as `neardup run` builds them for
# 1..64 shards (fig6_maps.csv).
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
echo "shards,part,records,batch,batches,pages,sends,resident,imbalance,seconds,wall_seconds" > "$measured"
pids=()
stop_servers() { [ ${#pids[@]} -eq 0 ] || { kill "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true; }; pids=(); }
trap stop_servers EXIT
field() { sed -n "$1" "$2" | head -1; }
tick=$(getconf CLK_TCK)
# cpu PID: the process's CPU seconds so far (user + system).
cpu() { awk -v t="$tick" '{ sub(/^.*\) /, ""); printf "%.3f", ($12 + $13) / t }' "/proc/$1/stat"; }
# Batch sizes per part: varied so that the fit can tell the per-batch cost from the per-page one.
batch_sizes=(1000 4000 500 2000)
for shards in $(seq 1 "$cores"); do
  addresses=()
  pids=()
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
    batch=${batch_sizes[$((k - 1))]}
    before=(); for p in "${pids[@]}"; do before+=("$(cpu "$p")"); done
    "$BIN" --log-level warn run --input "$work/part-$k.jsonl" --store "$work/p$shards/tier1" --out /dev/null \
      --shards "$shards" --batch "$batch" --tier2 "$(IFS=,; echo "${addresses[*]}")" > "$summary"
    # The busiest Tier 2 server's CPU seconds over the part: a machine per shard, as in the paper,
    # gives each shard its own core; here the cores are shared with Tier 1 and the neighbours.
    seconds=0
    for i in "${!pids[@]}"; do
      seconds=$(awk -v a="${before[$i]}" -v b="$(cpu "${pids[$i]}")" -v m="$seconds" 'BEGIN { d = b - a; print (d > m ? d : m) }')
    done
    batches=$(field 's/^batches *\([0-9]*\) .*/\1/p' "$summary")
    pages=$(field 's/^tier 2 *\([0-9]*\) pages compared.*/\1/p' "$summary")
    sends=$(field 's/^tier 2 .*, \([0-9]*\) page-shard sends.*/\1/p' "$summary")
    resident=$(field 's/^shards *\([0-9]*\) resident pages.*/\1/p' "$summary")
    imbalance=$(field 's/.*shard imbalance \([0-9.]*\).*/\1/p' "$summary")
    wall=$(field 's/.*tier2 compare \([0-9.]*\) s.*/\1/p' "$summary")
    for v in batches pages sends resident imbalance wall; do
      [ -n "${!v}" ] || { echo "no $v in the summary $summary" >&2; exit 1; }
    done
    echo "$shards,$k,$((n / parts)),$batch,$batches,$pages,$sends,$(( (resident_before + resident) / 2 )),$imbalance,$seconds,$wall" >> "$measured"
    resident_before=$resident
  done
  stop_servers
done
# The maps' shapes at 1..64 shards, 1D and 3D, as `neardup run` builds them (a 5% sample, cells
# balanced by load, contiguous runs of cells per shard): each shard count's run, in one process,
# of the crawl's first part gives its page-shard sends per page and its shard imbalance.
maps="$RESULTS/fig6_maps.csv"
echo "dims,shards,imbalance,sends_per_page" > "$maps"
for dims in 1 3; do
  # The dimensions through a configuration file: the shards take theirs from it.
  sed "s/^  dims: [0-9]* /  dims: $dims /" configs/embedded.textproto > "$work/dims$dims.textproto"
  grep -q "^  dims: $dims " "$work/dims$dims.textproto" || { echo "cannot set dims in $work/dims$dims.textproto" >&2; exit 1; }
  for shards in 1 2 4 8 16 32 64; do
    rm -rf "$work/shape"
    "$BIN" --log-level error run --input "$work/part-1.jsonl" --config "$work/dims$dims.textproto" --shards "$shards" \
      --store "$work/shape" --out /dev/null > "$work/shape.txt"
    pages=$(field 's/^tier 2 *\([0-9]*\) pages compared.*/\1/p' "$work/shape.txt")
    sends=$(field 's/^tier 2 .*, \([0-9]*\) page-shard sends.*/\1/p' "$work/shape.txt")
    imbalance=$(field 's/.*shard imbalance \([0-9.]*\).*/\1/p' "$work/shape.txt")
    [ -n "$pages" ] && [ -n "$sends" ] && [ -n "$imbalance" ] || { echo "no shape in $work/shape.txt" >&2; exit 1; }
    echo "$dims,$shards,$imbalance,$(awk -v s="$sends" -v p="$pages" 'BEGIN { printf "%.4f", s / p }')" >> "$maps"
  done
done
rm -rf "$work/shape"
csv="$RESULTS/fig6_throughput.csv"
"$BIN" --log-level warn experiment fig6-model --measured "$measured" --maps "$maps" --csv "$csv" | tee "$RESULTS/fig6_throughput.txt"
gnuplot <<GP
set terminal pngcairo size 800,500 noenhanced
set output "$RESULTS/fig6_throughput.png"
set datafile separator ","
set title "Fig. 6: Tier 2 throughput speed-up over one shard\n($n records; processes up to $cores shards, the fitted cost model beyond)"
set xlabel "Tier 2 shards"; set ylabel "speed-up over one shard"; set logscale x 2; set grid; set key top left
plot "< grep ',simulated,' $csv | grep '^3,'" using 2:5 with linespoints lw 2 pt 7 title "3D, simulated", \
     "< grep ',simulated,' $csv | grep '^1,'" using 2:5 with linespoints lw 2 pt 5 title "1D, simulated", \
     "< grep ',measured,' $csv" using 2:5 with points pt 9 ps 2.5 lc rgb "black" title "3D, measured (processes)"
GP
cat "$csv"
