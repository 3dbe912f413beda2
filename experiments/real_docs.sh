#!/usr/bin/env bash
# Real pages, the way crawlers hand them over: two versions of the same manual (Debian's
# libstdc++-11-doc and libstdc++-12-doc: the GNU C++ library's manual and its Doxygen API
# reference, ~3,900 HTML pages each) served on loopback by `python3 -m http.server`, crawled by
# `wget --recursive --warc-file`, and the WARC fed to `neardup run` and `neardup baseline`; then
# REP/RER of the run's groups and the crawler's view (drop precision, redundancy, share kept).
#
# The two packages conflict with each other (one may be installed at a time), so the script takes
# them as the archive ships them (`apt-get download`) and unpacks them into its work directory with
# `dpkg-deb -x`: nothing on the system changes. Pictures, style sheets and scripts are not crawled
# (--reject): they are not pages.
# Usage: experiments/real_docs.sh [--shards P] [--routing exact|rho]
#        (work directory: $TMPDIR/neardup-real-docs; results: experiments/results/real_docs.{csv,json})
source "$(dirname "$0")/common.sh"
shards=4
routing=exact
while [ "$#" -gt 0 ]; do
  case "$1" in
    --shards) shards="$2"; shift 2 ;;
    --routing) routing="$2"; shift 2 ;;
    *) echo "usage: $0 [--shards P] [--routing exact|rho]" >&2; exit 2 ;;
  esac
done
command -v wget >/dev/null || { echo "real_docs: wget missing (scripts/install-deps.sh experiments installs it)" >&2; exit 1; }
work="${TMPDIR:-/tmp}/neardup-real-docs"
mkdir -p "$work"
t=0.9

# 1. The manuals, unpacked once.
site="$work/site"
if [ ! -d "$site/libstdc++-12" ]; then
  mkdir -p "$work/debs" "$site"
  (cd "$work/debs" && apt-get download libstdc++-11-doc libstdc++-12-doc)
  for v in 11 12; do
    rm -rf "$work/x$v" && mkdir -p "$work/x$v"
    dpkg-deb -x "$work"/debs/libstdc++-$v-doc_*.deb "$work/x$v"
    ln -sfn "$work/x$v/usr/share/doc/gcc-$v-base/libstdc++" "$site/libstdc++-$v"
  done
  {
    echo "<html><head><title>Manuals</title></head><body><ul>"
    for v in 11 12; do
      echo "<li><a href=\"libstdc++-$v/manual/index.html\">libstdc++ $v manual</a></li>"
      echo "<li><a href=\"libstdc++-$v/user/index.html\">libstdc++ $v API reference</a></li>"
    done
    echo "</ul></body></html>"
  } > "$site/index.html"
fi

# 2. Served on loopback, crawled into a WARC.
warc="$work/docs.warc.gz"
if [ ! -s "$warc" ]; then
  (cd "$site" && exec python3 -u -m http.server 0 --bind 127.0.0.1 > "$work/server.log" 2>&1) &
  server=$!
  trap 'kill $server 2>/dev/null || true' EXIT
  port=""
  for _ in $(seq 100); do
    port=$(sed -n 's/.* port \([0-9]*\).*/\1/p' "$work/server.log" | head -1)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "real_docs: the HTTP server did not start" >&2; cat "$work/server.log" >&2; exit 1; }
  start=$(date +%s)
  # wget exits 8 when some link answered an error (404): expected on a real site.
  (cd "$work" && rm -rf mirror && mkdir mirror && cd mirror && \
    wget --recursive --level=inf --no-parent -e robots=off --no-verbose --delete-after \
      --reject '*.png,*.jpg,*.gif,*.svg,*.css,*.js,*.map,*.md5,*.pdf' \
      --warc-file="${warc%.warc.gz}" "http://127.0.0.1:$port/index.html" > "$work/wget.log" 2>&1) || \
    [ $? -eq 8 ] || { echo "real_docs: wget failed (see $work/wget.log)" >&2; exit 1; }
  kill $server 2>/dev/null || true
  trap - EXIT
  echo "real_docs: crawled in $(( $(date +%s) - start )) s: $(du -h "$warc" | cut -f1) WARC"
fi

# 3. neardup on the WARC, and the exact baseline as the truth.
out="$work/out-$routing-$shards"
rm -rf "$out" && mkdir -p "$out"
"$BIN" run --input "$warc" --threshold "$t" --shards "$shards" --routing "$routing" --store "$out/store" \
  --out "$out/groups.jsonl" --log-level warn | tee "$out/summary.txt"
"$BIN" baseline --input "$warc" --threshold "$t" --groups "$out/baseline.jsonl" --pairs "$out/pairs.jsonl" \
  --log-level warn | tee "$out/baseline.txt"
acc=$("$BIN" accuracy --groups "$out/groups.jsonl" --baseline "$out/baseline.jsonl" --pairs "$out/pairs.jsonl" \
  --threshold "$t")
echo "$acc" | tee "$RESULTS/real_docs-$routing-$shards.json"
csv="$RESULTS/real_docs.csv"
[ -s "$csv" ] || echo "routing,shards,pages,baseline_pairs,system_pairs,rep,rer,dropped,drop_precision,true_pairs,both_kept,redundancy,kept_share" > "$csv"
python3 - "$routing" "$shards" "$acc" >> "$csv" <<'PY'
import json, sys
r, p, a = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
print(f"{r},{p},{a['pages']},{a['baseline_pairs']},{a['system_pairs']},{a['rep']:.6f},{a['rer']:.6f},{a['dropped']},"
      f"{a['drop_precision']:.6f},{a['true_pairs']},{a['both_kept']},{a['redundancy']:.6f},{a['kept_share']:.6f}")
PY
tail -1 "$csv"
# The fewest pages a crawler could keep with no exact pair among them, greedily (pages by number
# of exact partners, most first; a page is kept unless a kept page is its partner): the share of
# pages kept beside it.
python3 - "$out/groups.jsonl" "$out/pairs.jsonl" <<'PY'
import collections, json, sys
pages = [json.loads(l) for l in open(sys.argv[1])]
pages = [p["url"] for p in pages if p.get("crawled", True)]
adj = collections.defaultdict(set)
for l in open(sys.argv[2]):
    p = json.loads(l)
    adj[p["a"]].add(p["b"])
    adj[p["b"]].add(p["a"])
kept, dropped = set(), set()
for u in sorted(pages, key=lambda u: -len(adj[u])):
    if u in kept or u in dropped:
        continue
    kept.add(u)
    dropped.update(v for v in adj[u] if v not in kept)
print(f"real_docs: greedy kept set: {len(kept)} of {len(pages)} pages ({len(kept) / len(pages):.4f})")
PY
