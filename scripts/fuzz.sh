#!/usr/bin/env bash
# Fuzzes: scripts/fuzz.sh [SECONDS]. Configures build-fuzz/ with clang and -DNEARDUP_FUZZ=ON
# (libFuzzer, ASan + UBSan), builds every fuzz target (neardup_fuzz in CMake), and runs each for
# SECONDS (30 by default) over its seed corpus. Exits 1 when a target crashed, leaked, read out of
# bounds or timed out (its log's tail is printed; the input that did it is in build-fuzz/artifacts/).
# New inputs the fuzzer finds go to build-fuzz/corpus/<target>/ (kept between runs), never into
# the source tree's seed corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
case "$seconds" in ''|*[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;; esac
bash scripts/install-deps.sh
dir=build-fuzz
# -O1 -g1: what the sanitizers recommend, readable stack traces, a faster build.
cmake -S . -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DNEARDUP_FUZZ=ON -DNEARDUP_WERROR=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" >/dev/null
ninja -C "$dir" fuzz
mkdir -p "$dir/artifacts"
status=0
while read -r name corpus; do
  [ -n "$name" ] || continue
  mkdir -p "$dir/corpus/$name"
  echo "fuzz.sh: $name for ${seconds}s over $corpus"
  # The first corpus directory receives what the run finds; the seeds are read only.
  if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
      "$dir/fuzz/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$dir/artifacts/$name-" "$dir/corpus/$name" "$corpus" 2>"$dir/$name.log"; then
    tail -n 60 "$dir/$name.log" >&2
    echo "fuzz.sh: $name FAILED (log: $dir/$name.log; inputs: $dir/artifacts/$name-*)" >&2
    status=1
  else
    grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|Done )' "$dir/$name.log" || true
  fi
done <"$dir/fuzz/targets.txt"
exit "$status"
