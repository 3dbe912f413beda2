#!/usr/bin/env bash
# The main job: build neardup and run it on the bundled sample crawl in one process, printing the
# duplicate groups. Outputs go to out/sample-{pairs,groups}.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh release
mkdir -p out
./build/bin/neardup baseline --input data/sample-crawl.jsonl --config configs/embedded.textproto \
  --pairs out/sample-pairs.jsonl --groups out/sample-groups.jsonl --show 10
