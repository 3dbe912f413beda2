#!/usr/bin/env bash
# The whole test suite: release build + ctest, then the same suite under ASan+UBSan.
# Set NEARDUP_SKIP_SANITIZE=1 to run only the release suite.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
bash scripts/build.sh release
(cd build && ctest --output-on-failure -j2 --timeout 600)
if [ "${NEARDUP_SKIP_SANITIZE:-0}" != "1" ]; then
  bash scripts/build.sh sanitize
  (cd build-sanitize && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
     ctest --output-on-failure -j2 --timeout 900)
fi
echo "test.sh: suite finished in $(( $(date +%s) - start ))s"
