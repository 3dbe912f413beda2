#!/usr/bin/env bash
# neardup beside two other near-duplicate tools on the same real pages, in the same minute: the
# most used one, datasketch's MinHashLSH (128 permutations, threshold 0.9, Python), and a compiled
# one, seomoz/simhash-cpp (64-bit SimHash of word 5-shingles, permuted-table search, Hamming
# distance <= K, single-threaded, batch). Both are MIT-licensed and vendored outside this project
# (PEERS, default ../shared/peers beside the checkout); they are measured, never depended on.
#
# The crawl is read as crawlers write it (default: the libstdc++ 11 and 12 manuals crawled into a
# WARC by experiments/real_docs.sh, which makes it when missing); `neardup extract` gives the text
# the tools without an HTML parser read. The exact baseline on that text is the truth.
# Every tool is timed by /usr/bin/time (wall and CPU seconds, file loading included) and scored.
# A run of neardup or simhash-cpp takes under a second or two, where one run's wall time moves by
# up to a tenth from run to run (and /usr/bin/time counts hundredths): each runs --repeat times
# (default 5), alternating with the other, and its median run (by wall time) is the one reported;
# datasketch, at about a minute, runs once.
#   - neardup: pair recall = exact pairs whose two pages end in one group; precision = share of
#     pages answered `duplicate` that are near-duplicates of the page named (drop precision);
#   - the others: recall = exact pairs reported; precision = reported pairs that are exact pairs.
# Prints a table with pages/s, CPU seconds per 1,000 pages and the ratios, and writes
# experiments/results/peers.csv. Run it on a quiet machine: the ratios are what it measures.
# Usage: experiments/peers.sh [--input crawl.(warc.gz|jsonl)] [--k K] [--shards P] [--repeat N]
source "$(dirname "$0")/common.sh"
PEERS=${PEERS:-../shared/peers}
input=""
k=3
shards=4
repeat=5
while [ "$#" -gt 0 ]; do
  case "$1" in
    --input) input="$2"; shift 2 ;;
    --k) k="$2"; shift 2 ;;
    --shards) shards="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    *) echo "usage: $0 [--input crawl.(warc.gz|jsonl)] [--k K] [--shards P] [--repeat N]" >&2; exit 2 ;;
  esac
done
[ -f "$PEERS/run_datasketch.py" ] && [ -x "$PEERS/simhash-cpp/run_simhash.sh" ] || {
  echo "peers: the peers are not at $PEERS (set PEERS=DIR)" >&2; exit 1; }
if [ -z "$input" ]; then
  input="${TMPDIR:-/tmp}/neardup-real-docs/docs.warc.gz"
  [ -s "$input" ] || bash experiments/real_docs.sh >&2
fi
t=0.9
work="${TMPDIR:-/tmp}/neardup-peers"
rm -rf "$work" && mkdir -p "$work"
text="$work/text.jsonl"
"$BIN" extract --input "$input" --out "$text" --log-level warn
"$BIN" baseline --input "$text" --threshold "$t" --pairs "$work/exact.jsonl" --groups "$work/baseline.jsonl" \
  --log-level warn > /dev/null

# timed NAME CMD...: runs CMD with its output in $work/NAME.out, its times in $work/NAME.time.
timed() {
  local name="$1"; shift
  /usr/bin/time -f "%e %U %S" -o "$work/$name.time" "$@" > "$work/$name.out" 2> "$work/$name.err" || {
    echo "peers: $name failed:" >&2; tail -20 "$work/$name.err" >&2; exit 1; }
}
# The median run of NAME (by wall time) becomes $work/NAME.time; the runs' walls go to NAME.walls.
median_of() {
  local name="$1"
  sort -n -k1,1 "$work/$name.runs" | awk -v m=$(( (repeat + 1) / 2 )) 'NR == m' > "$work/$name.time"
  cut -d' ' -f1 "$work/$name.runs" | sort -n | tr '\n' ' ' > "$work/$name.walls"
}
# Without SciPy (it cannot be installed beside Boost 1.81 here), the one function datasketch
# imports from it comes from experiments/peers_shim (the same band parameters: 5 x 25 at 0.9).
pypath=""
/usr/bin/python3 -c "import scipy" 2>/dev/null || pypath="$PWD/experiments/peers_shim"
timed datasketch env PYTHONPATH="$pypath" /usr/bin/python3 "$PEERS/run_datasketch.py" --input "$text" --threshold "$t" --out-pairs "$work/datasketch_pairs.jsonl"
# The peer compiles its driver on first use: build it outside the timed run.
head -n 20 "$text" > "$work/warmup.jsonl"
bash "$PEERS/simhash-cpp/run_simhash.sh" "$work/warmup.jsonl" "$work/warmup_pairs.jsonl" "$k" > /dev/null 2>&1 || {
  echo "peers: simhash-cpp does not build or run" >&2; exit 1; }
for name in neardup_text neardup_html simhash; do : > "$work/$name.runs"; done
for _ in $(seq 1 "$repeat"); do
  timed neardup_text "$BIN" run --input "$text" --threshold "$t" --shards "$shards" --out "$work/neardup_text.jsonl" --log-level warn
  cat "$work/neardup_text.time" >> "$work/neardup_text.runs"
  timed simhash bash "$PEERS/simhash-cpp/run_simhash.sh" "$text" "$work/simhash_pairs.jsonl" "$k"
  cat "$work/simhash.time" >> "$work/simhash.runs"
  timed neardup_html "$BIN" run --input "$input" --threshold "$t" --shards "$shards" --out "$work/neardup_html.jsonl" --log-level warn
  cat "$work/neardup_html.time" >> "$work/neardup_html.runs"
done
for name in neardup_text neardup_html simhash; do median_of "$name"; done
"$BIN" accuracy --groups "$work/neardup_text.jsonl" --baseline "$work/baseline.jsonl" --pairs "$work/exact.jsonl" \
  --threshold "$t" > "$work/neardup_text.accuracy"
"$BIN" accuracy --groups "$work/neardup_html.jsonl" --baseline "$work/baseline.jsonl" --pairs "$work/exact.jsonl" \
  --threshold "$t" > "$work/neardup_html.accuracy"

python3 - "$work" "$k" "$RESULTS/peers.csv" <<'PY'
import json, sys
work, k, csv = sys.argv[1], sys.argv[2], sys.argv[3]

def pairs(path, a="a", b="b"):
    out = set()
    for line in open(path):
        p = json.loads(line)
        u, v = p[a].split("#", 1)[0], p[b].split("#", 1)[0]
        if u != v:
            out.add((min(u, v), max(u, v)))
    return out

exact = pairs(f"{work}/exact.jsonl")
pages = sum(1 for line in open(f"{work}/baseline.jsonl"))

def times(name):
    wall, user, sys_ = (float(x) for x in open(f"{work}/{name}.time").read().split()[-3:])
    return wall, user + sys_

def neardup(name):
    groups = {}
    for line in open(f"{work}/{name}.jsonl"):
        p = json.loads(line)
        groups[p["url"]] = p["group"]
    recall = sum(1 for u, v in exact if u in groups and groups.get(u) == groups.get(v)) / max(len(exact), 1)
    acc = json.load(open(f"{work}/{name}.accuracy"))
    return recall, acc["drop_precision"], acc["rep"], acc["rer"]

def peer(name):
    found = pairs(f"{work}/{name}_pairs.jsonl")
    recall = len(found & exact) / max(len(exact), 1)
    precision = len(found & exact) / max(len(found), 1)
    return recall, precision, len(found)

rows = []
for name, label in (("neardup_text", "neardup run, text"), ("neardup_html", "neardup run, raw HTML")):
    wall, cpu = times(name)
    recall, precision, rep, rer = neardup(name)
    rows.append((name, label, wall, cpu, recall, precision, f"REP {rep:.4%} RER {rer:.4%}"))
for name, label in (("datasketch", "datasketch MinHashLSH"), ("simhash", f"simhash-cpp, k = {k}")):
    wall, cpu = times(name)
    recall, precision, n = peer(name)
    rows.append((name, label, wall, cpu, recall, precision, f"{n} pairs reported"))

by = {r[0]: r for r in rows}

def walls(name):
    try:
        return open(f"{work}/{name}.walls").read().split()
    except FileNotFoundError:
        return []

print(f"{pages} pages, {len(exact)} exact pairs (Jaccard >= 0.9 of word 5-shingles)")
print(f"{'tool':26} {'pages/s':>9} {'CPU s/1k pages':>15} {'recall':>7} {'precision':>9}  notes")
for name, label, wall, cpu, recall, precision, note in rows:
    runs = walls(name)
    if len(runs) > 1:
        note += f"; median of {len(runs)} runs of " + " ".join(runs) + " s"
    print(f"{label:26} {pages / wall:9.0f} {1000 * cpu / pages:15.3f} {recall:7.4f} {precision:9.4f}  {note}")
nt, nh, ds, sh = by["neardup_text"], by["neardup_html"], by["datasketch"], by["simhash"]
print(f"neardup (text) / datasketch: {ds[2] / nt[2]:.1f}x pages/s; / simhash-cpp: {sh[2] / nt[2]:.2f}x pages/s, "
      f"{sh[3] / nt[3]:.2f}x fewer CPU seconds per page")
print(f"neardup (raw HTML) / datasketch on text: {ds[2] / nh[2]:.1f}x pages/s")
with open(csv, "w") as f:
    f.write("tool,pages,exact_pairs,wall_s,cpu_s,pages_per_s,cpu_ms_per_page,recall,precision\n")
    for name, label, wall, cpu, recall, precision, note in rows:
        f.write(f"{name},{pages},{len(exact)},{wall:.3f},{cpu:.3f},{pages / wall:.1f},{1000 * cpu / pages:.4f},"
                f"{recall:.6f},{precision:.6f}\n")
PY
