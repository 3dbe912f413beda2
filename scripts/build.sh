#!/usr/bin/env bash
# Builds neardup: scripts/build.sh [release|sanitize] [TARGET...]. Installs missing packages first.
# With targets (e.g. neardup), only those are built; without, everything (the binary and the tests).
# release  -> build/          (optimised; build/bin/neardup)
# sanitize -> build-sanitize/ (ASan + UBSan, for the test suite)
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-release}"
shift || true
bash scripts/install-deps.sh
case "$mode" in
  release)  dir=build;          args=(-DCMAKE_BUILD_TYPE=Release) ;;
  # -O1 -g1 (line tables): what ASan recommends, readable stack traces, and a much faster build.
  # No -DNDEBUG: the asserts are alive here.
  sanitize) dir=build-sanitize; args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1"
                                      -DNEARDUP_SANITIZE=ON) ;;
  *) echo "usage: $0 [release|sanitize]" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" -G Ninja -DNEARDUP_WERROR=ON "${args[@]}" >/dev/null
ninja -C "$dir" "$@"
