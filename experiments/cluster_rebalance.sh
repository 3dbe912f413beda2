#!/usr/bin/env bash
# Rebalancing a running cluster (issue: rebalancing runs that move pages, its cluster half): a
# Tier 1 server over 4 Tier 2 server processes takes a generated crawl through its ingest API;
# a fifth server is added (neardup rebalance --server --shards 5) while the last quarter of the
# crawl is being ingested, then drained again. Beside each move, the same-size quarter ingested
# without one: the ingest API's acceptance rate (records/s) and the time until every record is
# decided, so the cost of the move to ingest is a ratio measured in the same minutes. The
# answers at the end are compared with the embedded run's (exact routing: they must be equal).
# The batch loop decides ingest while the pages move, keeping min_batch_share of its time for the
# batches; each move's report gives its decided records/s, set beside the quarter without a move.
#   bash experiments/cluster_rebalance.sh [records] [max_mb_per_s] [min_batch_share]   (default 200000 0 0.5)
# Writes experiments/results/cluster_rebalance.txt.
source "$(dirname "$0")/common.sh"
n=${1:-200000}
rate=${2:-0}
share=${3:-0.5}
work="${TMPDIR:-/tmp}/neardup-cluster-rebalance"
rm -rf "$work" && mkdir -p "$work"
c=$(crawl "$n")
out="$RESULTS/cluster_rebalance.txt"
: > "$out"
say() { echo "$*" | tee -a "$out"; }
now() { date +%s.%N; }
pids=()
stop_all() { [ ${#pids[@]} -eq 0 ] || { kill "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true; }; }
trap stop_all EXIT

say "cluster_rebalance: $n records ($c), $(nproc) cores, copy limit ${rate} MB/s (0: none), batches' share ${share}, $(date -u +%FT%TZ)"
# The embedded run: the answers the cluster must end with, and its map (4 shards).
"$BIN" --log-level warn run --input "$c" --store "$work/embedded" --out "$work/embedded.jsonl" > "$work/embedded.txt"
q=$(( n / 4 ))
for k in 1 2 3 4; do sed -n "$(( (k - 1) * q + 1 )),$(( k * q ))p" "$c" > "$work/part-$k.jsonl"; done
servers=()
for s in 0 1 2 3 4; do
  "$BIN" --log-level warn tier2-server --store "$work/t2-$s" --listen 127.0.0.1:0 --port-file "$work/t2-$s.port" \
    2> "$work/t2-$s.log" & pids+=($!)
done
for s in 0 1 2 3 4; do
  for _ in $(seq 1 100); do [ -s "$work/t2-$s.port" ] && break; sleep 0.1; done
  servers+=("127.0.0.1:$(cat "$work/t2-$s.port")")
done
four=$(IFS=,; echo "${servers[*]:0:4}")
five=$(IFS=,; echo "${servers[*]}")
cat > "$work/t1.textproto" <<CFG
tier1_server { linger_ms: 1000 }
CFG
"$BIN" --log-level warn tier1-server --config "$work/t1.textproto" --store "$work/cluster" --map "$work/embedded/map.pb" \
  --listen 127.0.0.1:0 --port-file "$work/t1.port" --tier2 "$four" 2> "$work/t1.log" & pids+=($!)
for _ in $(seq 1 100); do [ -s "$work/t1.port" ] && break; sleep 0.1; done
api="http://127.0.0.1:$(cat "$work/t1.port")"

# ingest PART: sends the part, then waits until it is decided; prints "accepted_rate decided_seconds".
ingest() {
  local t0 t1 line
  t0=$(now)
  line=$("$BIN" --log-level warn ingest --server "$api" --input "$work/part-$1.jsonl" | tail -1)
  settle "$api" || { echo "not settled" >&2; exit 1; }
  t1=$(now)
  echo "$line" | sed -n 's/.*records accepted in [0-9.e+-]* s (\([0-9.e+]*\) records\/s).*/\1/p' | tr '\n' ' '
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }'
}
read -r r1 d1 < <(ingest 1)
say "part 1 ($q records), 4 servers: accepted at ${r1} records/s, all decided after ${d1} s"
read -r r2 d2 < <(ingest 2)
say "part 2 ($q records), 4 servers, no move: accepted at ${r2} records/s, all decided after ${d2} s"

# The fifth server added while part 3 is ingested.
"$BIN" --log-level warn rebalance --server "$api" --shards 5 --tier2 "$five" --max-move 0.5 --max-mb-per-s "$rate" \
  --min-batch-share "$share" > "$work/add.txt" & rb=$!
read -r r3 d3 < <(ingest 3)
wait $rb || { cat "$work/add.txt" >&2; exit 1; }
settle "$api"
say "part 3 ($q records), a fifth server added meanwhile: accepted at ${r3} records/s, all decided after ${d3} s"
say "  add: $(grep '^{' "$work/add.txt" | tail -1)"

# Drained back to 4 while part 4 is ingested.
"$BIN" --log-level warn rebalance --server "$api" --shards 4 --tier2 "$four" --max-mb-per-s "$rate" \
  --min-batch-share "$share" > "$work/drain.txt" & rb=$!
read -r r4 d4 < <(ingest 4)
wait $rb || { cat "$work/drain.txt" >&2; exit 1; }
settle "$api"
say "part 4 ($q records), the fifth server drained meanwhile: accepted at ${r4} records/s, all decided after ${d4} s"
say "  drain: $(grep '^{' "$work/drain.txt" | tail -1)"
awk -v a="$r3" -v b="$r2" -v c="$d3" -v d="$d2" -v e="$r4" -v f="$d4" 'BEGIN {
  printf "ingest acceptance during a move / without: add %.2f, drain %.2f; time to decide a quarter: add %.2fx, drain %.2fx\n", a / b, e / b, c / d, f / d }' | tee -a "$out"
# Decided records per second while each move ran (its report) against the quarter without a move.
field() { grep '^{' "$1" | tail -1 | sed -n "s/.*\"$2\":\([0-9.e+-]*\).*/\1/p"; }
for m in add drain; do
  awk -v w="$(field "$work/$m.txt" decided_per_s_while_moving)" -v s="$(field "$work/$m.txt" moving_seconds)" \
      -v r="$(field "$work/$m.txt" records_decided_while_moving)" -v q="$q" -v d="$d2" -v share="$share" -v m="$m" 'BEGIN {
    base = q / d
    printf "%s: the move took %.2f s; %d records decided meanwhile, %.0f records/s against %.0f without a move: %.2f (share kept for batches %.2f)\n", m, s, r, w, base, (base > 0 ? w / base : 0), share }' | tee -a "$out"
done

# Every page's answer against the embedded run's. They are equal when the cluster cut its batches
# where the embedded run did (quarters that are whole batches). Otherwise a winner or a kept page
# can differ, as between two embedded runs with other --batch sizes; the groups (which pages are
# together) may not, and both runs score the same against the exact baseline.
python3 - "$api" "$work/embedded.jsonl" "$work/cluster.jsonl" <<'PY' | tee -a "$out"
import http.client, json, sys, urllib.parse
api, path, dump = sys.argv[1], sys.argv[2], sys.argv[3]
host, port = api.removeprefix("http://").split(":")
conn = http.client.HTTPConnection(host, int(port))  # one kept-alive connection
pages = differ = 0
want_groups, got_groups = {}, {}
with open(dump, "w") as out:
    for line in open(path):
        want = json.loads(line)
        conn.request("GET", "/v1/status?url=" + urllib.parse.quote(want["url"], safe=""))
        got = json.loads(conn.getresponse().read())
        out.write(json.dumps({"url": want["url"], "group": int(got["group"]), "winner": got["winner"],
                              "status": got["status"]}) + "\n")
        pages += 1
        want_groups.setdefault(int(want["group"]), set()).add(want["url"])
        got_groups.setdefault(int(got["group"]), set()).add(want["url"])
        if got["status"] != want["status"] or got["winner"] != want["winner"] or int(got["group"]) != int(want["group"]):
            differ += 1
same = {frozenset(g) for g in want_groups.values()} == {frozenset(g) for g in got_groups.values()}
print(f"answers against the embedded run: {differ} of {pages} pages differ; "
      f"groups (pages together) {'the same' if same else 'DIFFERENT'}")
sys.exit(0 if same else 1)
PY
"$BIN" --log-level warn baseline --input "$c" --groups "$work/baseline.jsonl" > /dev/null 2>&1
for run in embedded cluster; do
  say "$run against the exact baseline: $("$BIN" --log-level warn accuracy --groups "$work/$run.jsonl" \
    --baseline "$work/baseline.jsonl" | tail -1)"
done
