#!/usr/bin/env bash
# Checks each library folder's includes against the one line of its README that says what it may
# depend on ("Depends on: common/, tier2/."). A folder may always include itself and proto/.
# Folders nest (cluster/http/): an include "cluster/http/net.h" is a dependency on cluster/http/,
# and a name on the line allows that folder and every folder inside it ("email/" allows
# email/threads/). Every folder under a listed one that holds code is checked, and needs its own
# README. A README may also say what a folder never depends on, not even through the folders it
# may depend on ("Never depends on: tier1/, pipeline/."): the check follows the Depends-on lines
# from folder to folder and fails if one of those is reached.
# Tests (*_test.cc and their *_test_util.h) and fuzz targets (*_fuzz.cc) are not libraries and may
# include more. Exit 1 and one
# line per forbidden include or dependency; exit 0 and a summary otherwise.
#   scripts/check-deps.sh [ROOT]       (ROOT defaults to the repository)
#   scripts/check-deps.sh --self-test  (a tree with a forbidden include must fail the check)
set -euo pipefail
if [ "${1:-}" = "--self-test" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/tier2" "$tmp/tier1" "$tmp/cluster/http" "$tmp/cluster/tier2_server"
  echo "Depends on: common/." >"$tmp/tier2/README.md"
  echo "Depends on: common/." >"$tmp/tier1/README.md"
  echo "Depends on: common/, tier2/, cluster/http/." >"$tmp/cluster/README.md"
  echo "Depends on: common/." >"$tmp/cluster/http/README.md"
  printf 'Depends on: tier2/, cluster/http/.\nNever depends on: tier1/.\n' >"$tmp/cluster/tier2_server/README.md"
  printf '#include "common/status.h"\n#include "tier2/shard.h"\n' >"$tmp/tier2/shard.cc"
  printf '#include "tier2/shard.h"\n' >"$tmp/tier1/tier1_test.cc"   # tests may
  printf '#include "cluster/http/net.h"\n#include "tier2/shard.h"\n' >"$tmp/cluster/tier2_server/server.cc"
  bash "$0" "$tmp" >/dev/null || { echo "check-deps self-test: an allowed tree failed"; exit 1; }
  expect_fail() {  # $1: what the report must say
    if out=$(bash "$0" "$tmp"); then echo "check-deps self-test: a forbidden dependency passed ($1)"; exit 1; fi
    grep -qF "$1" <<<"$out" || { echo "check-deps self-test: wrong report: $out"; exit 1; }
  }
  printf '#include "tier1/tier1.h"\n' >"$tmp/tier2/bad.h"
  expect_fail 'tier2/bad.h includes tier1/'
  rm "$tmp/tier2/bad.h"
  # A nested folder: its own line rules, not its parent's.
  printf '#include "tier2/shard.h"\n' >"$tmp/cluster/http/bad.cc"
  expect_fail 'cluster/http/bad.cc includes tier2/'
  rm "$tmp/cluster/http/bad.cc"
  # A nested folder with code and no README.
  mkdir -p "$tmp/cluster/ops" && printf '#include "common/status.h"\n' >"$tmp/cluster/ops/ops.cc"
  expect_fail 'cluster/ops/ has no README.md'
  rm -r "$tmp/cluster/ops"
  # A folder that may never reach tier1/, through a folder that may.
  echo "Depends on: common/, tier1/." >"$tmp/cluster/http/README.md"
  expect_fail 'cluster/tier2_server/ may reach tier1/ through cluster/http/'
  echo "check-deps self-test: forbidden includes (nested folders too) and dependencies are caught"
  exit 0
fi
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
top=(common testing document storage baseline gencrawl partitioner tier2 tier1 pipeline cluster email experiments bench)
# Each listed folder and the folders inside it that hold code or a README (cluster/http, ...).
folders=()
for t in "${top[@]}"; do
  [ -d "$root/$t" ] || continue
  folders+=("$t")
  while IFS= read -r d; do
    d=${d#"$root"/}
    if [ -f "$root/$d/README.md" ] || compgen -G "$root/$d/*.h" >/dev/null || compgen -G "$root/$d/*.cc" >/dev/null; then
      folders+=("$d")
    fi
  done < <(find "$root/$t" -mindepth 1 -type d | sort)
done
bad=0
checked=0
declare -A allowed_of
# The folders a README line names (words ending in '/', nested ones whole), without the '/'.
names_on() { (grep -oE '[a-z0-9_]+(/[a-z0-9_]+)*/' <<<"$1" || true) | sed 's#/$##' | tr '\n' ' '; }
# Whether folder $2 is one of the names in $1 or inside one of them.
allows() {
  local name
  for name in $1; do
    if [ "$2" = "$name" ] || [[ "$2" == "$name"/* ]]; then return 0; fi
  done
  return 1
}
for f in "${folders[@]}"; do
  readme="$root/$f/README.md"
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
  allowed="$f proto $(names_on "$line")"
  allowed_of[$f]=$allowed
  while IFS= read -r hit; do
    file=${hit%%:*}
    # The included file's folder: "cluster/http/net.h" -> cluster/http.
    dep=$(sed -E 's/.*#include "(([a-z0-9_]+\/)+)[^\/"]*".*/\1/; s#/$##' <<<"$hit")
    checked=$((checked + 1))
    if ! allows "$allowed" "$dep"; then
      echo "check-deps: ${file#"$root"/} includes $dep/, which $f/README.md does not allow (${line})"
      bad=1
    fi
  done < <(grep -Hn '#include "[a-z0-9_]*/' "$root/$f"/*.h "$root/$f"/*.cc 2>/dev/null | grep -v -E '_test\.cc:|_test_util\.h:|_fuzz\.cc:' || true)
done
# "Never depends on": the folders reachable through the Depends-on lines, breadth first.
for f in "${folders[@]}"; do
  never=$(grep -m1 -E 'Never depends on:' "$root/$f/README.md" 2>/dev/null || true)
  [ -n "$never" ] || continue
  forbidden=$(names_on "$never")
  declare -A via=([$f]="")
  queue=("$f")
  while [ ${#queue[@]} -gt 0 ]; do
    cur=${queue[0]}
    queue=("${queue[@]:1}")
    for next in ${allowed_of[$cur]:-}; do
      # A name may be a folder with a README of its own, or hold such folders (cluster/ allows cluster/http/).
      for g in "${folders[@]}"; do
        if [ "$g" = "$next" ] || [[ "$g" == "$next"/* ]]; then
          if [ -z "${via[$g]+x}" ]; then via[$g]=$cur; queue+=("$g"); fi
        fi
      done
      for x in $forbidden; do
        if [ "$next" = "$x" ] || [[ "$next" == "$x"/* ]] || [[ "$x" == "$next"/* ]]; then
          if [ "$cur" = "$f" ]; then echo "check-deps: $f/ may depend on $next/, which its README forbids ($never)"
          else echo "check-deps: $f/ may reach $x/ through $cur/, which its README forbids ($never)"; fi
          bad=1
        fi
      done
    done
  done
  unset via
done
if [ "$bad" -ne 0 ]; then exit 1; fi
echo "check-deps: ${checked} includes in ${#folders[@]} folders follow their READMEs' dependency lines"
