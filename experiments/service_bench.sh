#!/usr/bin/env bash
# The cluster service's figures, each a ratio measured in the same minutes:
#   1. ingest through a local cluster (1 Tier 1, 4 Tier 2) against the embedded run, same crawl;
#   2. status queries over HTTP (keep-alive, N clients) against redis-benchmark -t get;
#   3. status queries while ingest runs at full speed (p50, p99);
#   4. a Tier 2 server SIGKILLed during ingest: nothing acknowledged lost, groups identical.
#   bash experiments/service_bench.sh [records]   (default 1000000)
# Writes experiments/results/service_bench.txt. redis-server is installed for this script only.
source "$(dirname "$0")/common.sh"
n=${1:-1000000}
command -v redis-server >/dev/null || apt-get install -y -qq --no-install-recommends redis-server >/dev/null
work="${TMPDIR:-/tmp}/neardup-service-bench"
rm -rf "$work" && mkdir -p "$work"
c=$(crawl "$n")
out="$RESULTS/service_bench.txt"
: > "$out"
say() { echo "$*" | tee -a "$out"; }
now() { date +%s.%N; }
# cluster_up NAME: a cluster of 4 Tier 2 servers under $work/NAME with the embedded run's map; sets API.
cluster_up() {
  cat > "$work/$1.textproto" <<CFG
cluster { dir: "$work/$1" tier2_servers: 4 restart_min_ms: 200 }
tier1_server { listen: "127.0.0.1:0" map: "$work/embedded/map.pb" linger_ms: 30000 max_batch_delay_ms: 600000 }
CFG
  API=$("$BIN" --log-level warn cluster up --config "$work/$1.textproto" | sed -n 's/.*the API is at //p')
}

say "service_bench: $n records ($c), $(nproc) cores, $(date -u +%FT%TZ)"
# 1. Embedded, then the same crawl through a cluster (ingest start to the last batch committed).
t0=$(now)
"$BIN" --log-level warn run --input "$c" --store "$work/embedded" --out "$work/embedded.jsonl" > "$work/embedded.txt"
t1=$(now)
embedded=$(echo "$n / ($t1 - $t0)" | bc -l)
cluster_up ingest
t0=$(now)
"$BIN" --log-level warn ingest --server "$API" --input "$c" --batch-records 2000 > "$work/ingest.txt"
settle "$API"
t1=$(now)
through=$(echo "$n / ($t1 - $t0)" | bc -l)
say "$(printf 'ingest: embedded run %.0f records/s; through the cluster %.0f records/s (%s); ratio %.2f' \
      "$embedded" "$through" "$(tail -1 "$work/ingest.txt")" "$(echo "$through / $embedded" | bc -l)")"

# 2. Status over HTTP against redis, the same minute; 3. status during ingest.
for clients in 4 16; do
  say "$("$BIN" --log-level warn bench status-http --server "$API" --input "$c" --clients $clients --seconds 10 --redis)"
done
head -n 200000 "$c" | sed 's#"url":"http#"url":"http://again.example/http#' > "$work/more.jsonl"
say "during ingest: $("$BIN" --log-level warn bench status-http --server "$API" --input "$c" --clients 4 --seconds 20 \
      --ingest "$work/more.jsonl" | tr '\n' ' ')"
"$BIN" --log-level warn cluster down --config "$work/ingest.textproto" > /dev/null

# 4. A Tier 2 server killed (SIGKILL) half way through the ingest; the supervisor starts it again.
cluster_up kill
( sleep 20; pid=$(grep -A5 'name: "tier2-2"' "$work/kill/membership.textproto" | sed -n 's/ *pid: //p' | head -1); kill -9 "$pid" ) &
"$BIN" --log-level warn ingest --server "$API" --input "$c" --batch-records 2000 > "$work/ingest-kill.txt"
wait
settle "$API"
"$BIN" --log-level warn cluster down --config "$work/kill.textproto" > /dev/null
# The groups file of the stopped store, read through its Tier 2 servers started again by hand.
addresses=$(grep address "$work/kill/membership.textproto" | head -4 | cut -d'"' -f2)
pids=()
i=0
for a in $addresses; do
  "$BIN" --log-level warn tier2-server --store "$work/kill/tier2-$i" --listen "$a" & pids+=($!)
  i=$((i + 1))
done
sleep 2
"$BIN" --log-level warn run --input "$work/kill/tier1/ingest.jsonl" --store "$work/kill/tier1" --out "$work/kill.jsonl" \
  --tier2 "$(echo $addresses | tr ' ' ',')" > /dev/null
kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null || true
accepted=$(sed -n 's/^ingest: \([0-9]*\) of.*/\1/p' "$work/ingest-kill.txt")
restarts=$(grep -c 'was killed by signal 9' "$work/kill/logs/supervisor.log" || true)
say "tier2 SIGKILL during ingest: $accepted of $n records acknowledged, $restarts restart(s); final groups $(cmp -s "$work/kill.jsonl" "$work/embedded.jsonl" && echo identical || echo DIFFERENT) to the embedded run's"
