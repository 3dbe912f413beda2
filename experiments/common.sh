# Shared by the experiment scripts: builds neardup and gnuplot if missing, and makes the crawl.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/install-deps.sh experiments >/dev/null
[ -x build/bin/neardup ] || bash scripts/build.sh release
BIN=build/bin/neardup
RESULTS=experiments/results
mkdir -p "$RESULTS"
# Signed length vectors of each crawl, reused by the partition experiments (--cache-dir).
VECTOR_CACHE=${VECTOR_CACHE:-${TMPDIR:-/tmp}/neardup-vectors}
# crawl PAGES: prints the path of a generated crawl of PAGES records (seed 1), made once.
crawl() {
  local path="${TMPDIR:-/tmp}/neardup-crawl-$1.jsonl"
  [ -s "$path" ] || "$BIN" gen-crawl --pages "$1" --seed 1 --out "$path" --log-level warn >&2
  echo "$path"
}
