#!/usr/bin/env bash
# The main job: build neardup and replay the bundled sample crawl through Tier 1 and the Tier 2
# shards in one process (neardup run), printing the summary and the largest duplicate groups.
# Outputs: out/sample-groups.jsonl (every page, its group, winner and status) and
# out/sample-status.jsonl (each page's status as its batch committed).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh release neardup   # the binary only, not the tests
mkdir -p out
rm -rf out/sample-store
./build/bin/neardup run --input data/sample-crawl.jsonl --config configs/embedded.textproto \
  --store out/sample-store --out out/sample-groups.jsonl --status-out out/sample-status.jsonl --batch 100
echo
echo "largest duplicate groups (winner first):"
python3 - <<'PY' 2>/dev/null || awk -F'"group":' '{split($2,a,","); n[a[1]]++} END {for (g in n) if (n[g] > 1) c++; print c " groups with 2+ pages"}' out/sample-groups.jsonl
import json, collections
groups = collections.defaultdict(list)
for line in open("out/sample-groups.jsonl"):
    r = json.loads(line)
    groups[r["group"]].append(r)
multi = sorted((g for g in groups.values() if len(g) > 1), key=len, reverse=True)
print(f"{len(multi)} groups with 2+ pages")
for g in multi[:5]:
    winner = g[0]["winner"]
    print(f"group {g[0]['group']} ({len(g)} pages), winner {winner}")
    for r in sorted(g, key=lambda r: r["url"] != winner)[:6]:
        sim = r.get("similarity_to_winner")
        print(f"  {r['status']:9} {r['url']}" + (f"  (similarity {sim:.3f})" if sim is not None and r['url'] != winner else ""))
PY
