#!/usr/bin/env bash
# Checks each library folder's includes against the one line of its README that says what it may
# depend on ("Depends on: common/, tier2/."). A folder may always include itself and proto/.
# Tests (*_test.cc and their *_test_util.h) are not libraries and may include more. Exit 1 and one line per forbidden
# include; exit 0 and a summary otherwise.
#   scripts/check-deps.sh [ROOT]       (ROOT defaults to the repository)
#   scripts/check-deps.sh --self-test  (a tree with a forbidden include must fail the check)
set -euo pipefail
if [ "${1:-}" = "--self-test" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/tier2" "$tmp/tier1"
  echo "Depends on: common/." >"$tmp/tier2/README.md"
  echo "Depends on: common/." >"$tmp/tier1/README.md"
  printf '#include "common/status.h"\n#include "tier2/shard.h"\n' >"$tmp/tier2/shard.cc"
  printf '#include "tier2/shard.h"\n' >"$tmp/tier1/tier1_test.cc"   # tests may
  bash "$0" "$tmp" >/dev/null || { echo "check-deps self-test: an allowed tree failed"; exit 1; }
  printf '#include "tier1/tier1.h"\n' >"$tmp/tier2/bad.h"
  if out=$(bash "$0" "$tmp"); then echo "check-deps self-test: a forbidden include passed"; exit 1; fi
  grep -q 'tier2/bad.h includes tier1/' <<<"$out" || { echo "check-deps self-test: wrong report: $out"; exit 1; }
  rm "$tmp/tier2/bad.h"
  mkdir -p "$tmp/email/threads" "$tmp/email/domains"   # nested folders are checked on their own
  echo "Depends on: common/." >"$tmp/email/threads/README.md"
  echo "Depends on: common/." >"$tmp/email/domains/README.md"
  printf '#include "email/threads/thread_weaver.h"\n#include "email/domains/domain_counts.h"\n' >"$tmp/email/threads/x.cc"
  if out=$(bash "$0" "$tmp"); then echo "check-deps self-test: a forbidden nested include passed"; exit 1; fi
  grep -q 'email/threads/x.cc includes email/domains/' <<<"$out" || { echo "check-deps self-test: wrong report: $out"; exit 1; }
  echo "check-deps self-test: a forbidden include is caught"
  exit 0
fi
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
folders=(common testing document storage baseline gencrawl partitioner tier2 tier1 pipeline cluster
  email/mail email/templates email/threads email/domains experiments bench)
bad=0
checked=0
for f in "${folders[@]}"; do
  readme="$root/$f/README.md"
  [ -d "$root/$f" ] || continue
  if [ ! -f "$readme" ]; then
    echo "check-deps: $f/ has no README.md saying what it may depend on"
    bad=1
    continue
  fi
  line=$(grep -m1 -E 'Depends on:' "$readme" || true)
  if [ -z "$line" ]; then
    echo "check-deps: $f/README.md has no 'Depends on' line"
    bad=1
    continue
  fi
  # The folders named on that line (words ending in '/'; a nested one such as email/mail/ whole).
  allowed=" $f proto $( (grep -o '[a-z0-9_/]*/' <<<"$line" || true) | sed 's#/$##' | tr '\n' ' ') "
  while IFS= read -r hit; do
    file=${hit%%:*}
    dep=$(sed -E 's/.*#include "([a-z0-9_]+)\/.*/\1/' <<<"$hit")
    # A nested folder checked on its own (email/mail) is the dependency, not its parent.
    path=$(sed -E 's/.*#include "([^"]*)".*/\1/' <<<"$hit")
    for g in "${folders[@]}"; do [[ "$g" == */* && "$path" == "$g"/* ]] && dep=$g; done
    checked=$((checked + 1))
    # A folder on the line allows its nested folders too (email/ allows email/mail/).
    if [[ "$allowed" != *" $dep "* && "$allowed" != *" ${dep%%/*} "* ]]; then
      echo "check-deps: ${file#"$root"/} includes $dep/, which $f/README.md does not allow (${line})"
      bad=1
    fi
  done < <(grep -Hn '#include "[a-z0-9_]*/' "$root/$f"/*.h "$root/$f"/*.cc 2>/dev/null | grep -v -E '_test\.cc:|_test_util\.h:' || true)
done
if [ "$bad" -ne 0 ]; then exit 1; fi
echo "check-deps: ${checked} includes in ${#folders[@]} folders follow their READMEs' dependency lines"
