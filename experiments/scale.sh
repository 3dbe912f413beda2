#!/usr/bin/env bash
# Cost per record as the collection grows: `neardup run` (embedded, default configuration) over
# generated crawls of each size in turn (seed 1), one after the other in the same session: wall
# seconds, records/s, CPU seconds, peak RSS (the process's, and its anonymous part sampled every
# 2 s), the store's size on disk, and the run's whole summary. The first size runs again after the
# others: a machine's speed drifts over the long runs, so each larger size's time per record is
# given against the mean of the first size's two runs, the one before it and the one after. Each
# run of an input that fits in the page cache finds it there.
#   bash experiments/scale.sh [--config c.textproto] [SIZE...]   (default 1000000 10000000)
# At 10M records the crawl takes 30 GB and the store about 32 GB of $TMPDIR; each store is
# removed after its run. Writes experiments/results/scale.txt (scale_NAME.txt with a --config
# NAME.textproto).
source "$(dirname "$0")/common.sh"
config=()
out="$RESULTS/scale.txt"
if [ "${1:-}" = "--config" ]; then
  config=(--config "$2")
  out="$RESULTS/scale_$(basename "$2" .textproto).txt"
  shift 2
fi
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000000 10000000)
work="${TMPDIR:-/tmp}/neardup-scale"
: > "$out"
say() { echo "$*" | tee -a "$out"; }
say "scale: neardup run ${config[*]} at ${sizes[*]} generated records, $(nproc) cores, $(date -u +%FT%TZ)"
runs=("${sizes[@]}")
[ ${#sizes[@]} -gt 1 ] && runs+=("${sizes[0]}")
first_us=()
declare -A size_us
mem_kb=$(awk '/^MemTotal/ { print $2 }' /proc/meminfo)
for n in "${runs[@]}"; do
  c=$(crawl "$n")
  # An input that fits in the page cache beside its store (what `neardup run` keeps cached: a
  # quarter of the memory here) is read once first, so that every run of it finds it there, as a
  # second run would; a larger one streams from the disk, and the run drops its pages as it reads.
  if [ $(($(stat -c %s "$c") / 1024)) -lt $((mem_kb / 4)) ]; then cat "$c" > /dev/null; fi
  rm -rf "$work" && mkdir -p "$work"
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$BIN" --log-level warn run "${config[@]}" --input "$c" --store "$work/store" \
    > "$work/summary.txt" & pid=$!
  anon=0
  while kill -0 "$pid" 2>/dev/null; do
    a=$(awk '/^RssAnon/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
    # /usr/bin/time's child is the run: its RssAnon.
    for child in $(pgrep -P "$pid" || true); do
      a=$(awk '/^RssAnon/ { print $2 }' "/proc/$child/status" 2>/dev/null || echo 0)
    done
    [ "${a:-0}" -gt "$anon" ] && anon=$a
    sleep 2
  done
  wait "$pid"
  read -r wall user sys rss_kb < "$work/time"
  disk=$(du -sb "$work/store" | cut -f1)
  us=$(awk -v w="$wall" -v n="$n" 'BEGIN { printf "%.2f", w * 1e6 / n }')
  if [ "$n" = "${sizes[0]}" ]; then first_us+=("$us"); else size_us[$n]=$us; fi
  say "$n records: $wall s wall ($(awk -v w="$wall" -v n="$n" 'BEGIN { printf "%.0f", n / w }') records/s," \
    "$us us/record), CPU $user s user + $sys s sys, peak RSS $((rss_kb / 1024)) MiB (anonymous $((anon / 1024))" \
    "MiB sampled), store $(awk -v d="$disk" 'BEGIN { printf "%.1f", d / 1e9 }') GB"
  sed 's/^/  /' "$work/summary.txt" | tee -a "$out"
  rm -rf "$work"
done
if [ ${#sizes[@]} -gt 1 ]; then
  base=$(printf '%s\n' "${first_us[@]}" | awk '{ s += $1 } END { printf "%.2f", s / NR }')
  say "time per record against ${sizes[0]} records (mean of its runs before and after: ${first_us[*]} us = $base us):"
  for n in "${sizes[@]:1}"; do
    say "  $n records: ${size_us[$n]} us = $(awk -v a="${size_us[$n]}" -v b="$base" 'BEGIN { printf "%.2f", a / b }')x"
  done
fi
