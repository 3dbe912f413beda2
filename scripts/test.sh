#!/usr/bin/env bash
# The whole test suite: the optimised binary's end-to-end tests (ctest label e2e), every test
# under ASan+UBSan, then the concurrent code's tests (row store, worker pools, shards, the pipeline,
# the servers, their clients and the HTTP API) under ThreadSanitizer, then 20 s of each fuzz
# target (scripts/fuzz.sh).
# Set NEARDUP_SKIP_SANITIZE=1 to run every test on the optimised build only.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
last=$start
# Prints how long the phase that just ended took (CI's time budget is watched phase by phase).
phase() { local t; t=$(date +%s); echo "test.sh: $1 took $((t - last))s"; last=$t; }
if [ "${NEARDUP_SKIP_SANITIZE:-0}" = "1" ]; then
  bash scripts/build.sh release
  (cd build && ctest --output-on-failure -j2 --timeout 600)
else
  # The optimised binary end to end (label e2e); every test, unit tests included, runs under the
  # sanitizers below, with asserts alive.
  bash scripts/build.sh release neardup e2e_tests
  phase "release build"
  (cd build && ctest --output-on-failure -j2 --timeout 600 -L e2e)
  phase "release e2e tests"
  bash scripts/build.sh sanitize
  phase "sanitizer build"
  (cd build-sanitize && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
     ctest --output-on-failure -j2 --timeout 900)
  phase "sanitizer tests"
  concurrent=(neardup row_store_test worker_pool_test run_on_threads_test shard_compare_test shard_cap_test shard_write_test pipeline_test
              remote_shard_set_test tier2_server_test fault_proxy_test store_test ingest_log_test http_api_test service_test
              bootstrap_map_test tier1_service_test shard_rebalancer_test net_test https_test shard_health_test email_api_test email_cluster_store_test
              email_thread_weaver_test email_domain_counts_test batch_test shard_pools_test shard_writes_test)
  bash scripts/build.sh tsan "${concurrent[@]}"
  phase "ThreadSanitizer build"
  # Every test of the binaries named: their suites, as the binaries list them (none is left out
  # unsaid; service_test runs the neardup binary built here).
  suites=$(for b in "${concurrent[@]}"; do
             [ "$b" = neardup ] && continue
             build-tsan/tests/"$b" --gtest_list_tests | grep -E '^[^ ].*\.$' | sed 's/\.$//'
           done | sort -u)
  pattern="^($(tr '\n' '|' <<<"$suites" | sed 's/|$//'))\\."
  echo "test.sh: ThreadSanitizer runs every test of $(wc -l <<<"$suites") suites: $(tr '\n' ' ' <<<"$suites")"
  # LevelDB is not built with ThreadSanitizer: what it does inside its own library is not checked.
  (cd build-tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/../scripts/tsan.supp" \
     ctest --output-on-failure -j2 --timeout 900 -R "$pattern")
  phase "ThreadSanitizer tests"
  # A short fuzzing run of every fuzz target (clang, libFuzzer + ASan + UBSan) over its seed corpus.
  bash scripts/fuzz.sh 20
  phase "fuzzing"
fi
echo "test.sh: suite finished in $(( $(date +%s) - start ))s"
