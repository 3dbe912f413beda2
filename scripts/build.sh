#!/usr/bin/env bash
# Builds neardup: scripts/build.sh [release|sanitize|tsan] [TARGET...]. Installs missing packages first.
# With targets (e.g. neardup), only those are built; without, everything (the binary and the tests).
# release  -> build/          (optimised; build/bin/neardup)
# sanitize -> build-sanitize/ (ASan + UBSan, asserts alive, for the test suite)
# tsan     -> build-tsan/     (ThreadSanitizer, asserts alive, for the concurrent code's tests)
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-release}"
shift || true
bash scripts/install-deps.sh
# -O1 -g1 (line tables): what the sanitizers recommend, readable stack traces, and a much faster
# build. No -DNDEBUG in the sanitizer builds: the asserts are alive there.
debug=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1")
case "$mode" in
  release)  dir=build;          args=(-DCMAKE_BUILD_TYPE=Release) ;;
  sanitize) dir=build-sanitize; args=("${debug[@]}" -DNEARDUP_SANITIZE=ON) ;;
  # File by file under ThreadSanitizer: a unity batch emits std::string members that libstdc++ is
  # then bound to, instrumented, so LevelDB's own string copies (whose locks the sanitizer does not
  # see) are reported as races.
  tsan)     dir=build-tsan;     args=("${debug[@]}" -DNEARDUP_TSAN=ON -DNEARDUP_UNITY=OFF) ;;
  *) echo "usage: $0 [release|sanitize|tsan] [TARGET...]" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" -G Ninja -DNEARDUP_WERROR=ON "${args[@]}" >/dev/null
ninja -C "$dir" "$@"
