#!/usr/bin/env bash
# The main job: build neardup and replay the bundled real crawl (data/sample-docs.warc.gz: the GNU
# C++ library's manual in versions 11 and 12, crawled by wget; scripts/make-sample-docs.sh) through
# Tier 1 and the Tier 2 shards in one process (neardup run), printing the summary, the pages that
# changed between the versions and still are near-duplicates, groups of identical pages and the pages
# with no near-duplicate.
# Outputs: out/sample-groups.jsonl (every page, its group, winner and status) and
# out/sample-status.jsonl (each page's status as its batch committed).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh release neardup   # the binary only, not the tests
mkdir -p out
rm -rf out/sample-store
./build/bin/neardup run --input data/sample-docs.warc.gz --config configs/embedded.textproto --shards 2 \
  --store out/sample-store --out out/sample-groups.jsonl --status-out out/sample-status.jsonl --batch 100
echo
python3 - <<'PY' 2>/dev/null || awk -F'"group":' '{split($2,a,","); n[a[1]]++} END {for (g in n) if (n[g] > 1) c++; print c " groups with 2+ pages"}' out/sample-groups.jsonl
import json, collections
groups = collections.defaultdict(list)
for line in open("out/sample-groups.jsonl"):
    r = json.loads(line)
    if r.get("crawled", True):
        groups[r["group"]].append(r)
site = "http://127.0.0.1:8765/"
short = lambda u: u[len(site):] if u.startswith(site) else u
multi = [g for g in groups.values() if len(g) > 1]
single = [g[0] for g in groups.values() if len(g) == 1]
print(f"{sum(len(g) for g in groups.values())} pages in {len(groups)} groups: {len(multi)} with 2+ pages, "
      f"{len(single)} pages with no near-duplicate")
def show(g):
    winner = g[0]["winner"]
    for r in sorted(g, key=lambda r: (r["url"] != winner, r["url"])):
        sim = r.get("similarity_to_winner")
        tail = f"  similarity {sim:.3f}" if sim is not None and r["url"] != winner else ""
        print(f"    {r['status']:9} {short(r['url'])}{tail}")
changed = sorted((g for g in multi if any(r.get("similarity_to_winner", 1) < 1 for r in g)),
                 key=lambda g: min(r.get("similarity_to_winner", 1) for r in g))
print(f"\n{len(changed)} groups whose pages differ (the least similar first; the rest are identical copies):")
for g in changed[:5]:
    show(g)
same = sorted((g for g in multi if g not in changed), key=lambda g: (-len(g), g[0]["url"]))
print(f"\n{len(same)} groups of pages with identical text (the largest first):")
for g in same[:3]:
    show(g)
print("\npages with no near-duplicate:")
for r in sorted(single, key=lambda r: r["url"])[:5]:
    print(f"    {r['status']:9} {short(r['url'])}")
print(f"\n(pages are under {site}; bash scripts/make-sample-docs.sh --serve serves them there)")
PY
