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
# settle URL: waits (at most an hour) until the API at URL has nothing pending and no ingest
# backlog (its /metrics); 1 if it never does.
settle() {
  for _ in $(seq 1 36000); do
    m=$(curl -s "$1/metrics" || true)
    if echo "$m" | grep -q '^neardup_pending_pages 0$' && echo "$m" | grep -q '^neardup_ingest_backlog_bytes 0$'; then return 0; fi
    sleep 0.1
  done
  return 1
}
