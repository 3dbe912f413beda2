#!/usr/bin/env bash
# Makes data/sample-docs.warc.gz, the main job's real crawl: the GNU C++ library's manual as
# Debian ships it in two versions (libstdc++-11-doc and libstdc++-12-doc, taken from the archive
# with `apt-get download` and unpacked with `dpkg-deb -x` into a work directory: the packages
# conflict, and nothing on the system changes), served on loopback at a fixed address
# (http://127.0.0.1:8765/libstdc++-11/manual/... and .../libstdc++-12/manual/...) by
# `python3 -m http.server` and crawled by `wget --recursive --warc-file`, as a crawler hands pages
# over. The API reference of the packages is left out (its thousands of pages are
# experiments/real_docs.sh's), and so are pictures, style sheets and scripts.
# Usage: scripts/make-sample-docs.sh            (writes data/sample-docs.warc.gz)
#        scripts/make-sample-docs.sh --serve    (serves the manuals at that address until Ctrl-C,
#                                                to open the pages of the sample's groups)
set -euo pipefail
cd "$(dirname "$0")/.."
port=8765
work="${TMPDIR:-/tmp}/neardup-sample-docs"
site="$work/site"
mkdir -p "$work"
if [ ! -d "$site/libstdc++-12/manual" ]; then
  command -v dpkg-deb >/dev/null || { echo "make-sample-docs: dpkg-deb missing (Debian only)" >&2; exit 1; }
  rm -rf "$work/debs" "$site" && mkdir -p "$work/debs" "$site"
  (cd "$work/debs" && apt-get download libstdc++-11-doc libstdc++-12-doc) ||
    { echo "make-sample-docs: apt-get download failed (run apt-get update?)" >&2; exit 1; }
  for v in 11 12; do
    rm -rf "$work/x$v" && mkdir -p "$work/x$v"
    dpkg-deb -x "$work"/debs/libstdc++-$v-doc_*.deb "$work/x$v"
    mkdir -p "$site/libstdc++-$v"
    ln -sfn "$work/x$v/usr/share/doc/gcc-$v-base/libstdc++/manual" "$site/libstdc++-$v/manual"
  done
  {
    echo "<html><head><title>The GNU C++ library manual, two versions</title></head><body><ul>"
    for v in 11 12; do echo "<li><a href=\"libstdc++-$v/manual/index.html\">libstdc++ $v manual</a></li>"; done
    echo "</ul></body></html>"
  } > "$site/index.html"
fi
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  echo "make-sample-docs: 127.0.0.1:$port is in use (the crawl's URLs name this address)" >&2
  exit 1
fi
if [ "${1:-}" = "--serve" ]; then
  echo "the manuals: http://127.0.0.1:$port/ (Ctrl-C stops)"
  cd "$site" && exec python3 -m http.server "$port" --bind 127.0.0.1
fi
(cd "$site" && exec python3 -u -m http.server "$port" --bind 127.0.0.1 > "$work/server.log" 2>&1) &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
rm -rf "$work/mirror" && mkdir -p "$work/mirror"
# wget exits 8 when some link answered an error (404): expected on a real site.
(cd "$work/mirror" && wget --recursive --level=inf --no-parent -e robots=off --no-verbose --delete-after \
  --reject '*.png,*.jpg,*.gif,*.svg,*.css,*.js,*.map,*.md5,*.pdf' \
  --warc-file="$work/sample-docs" "http://127.0.0.1:$port/index.html" > "$work/wget.log" 2>&1) ||
  [ $? -eq 8 ] || { echo "make-sample-docs: wget failed (see $work/wget.log)" >&2; exit 1; }
cp "$work/sample-docs.warc.gz" data/sample-docs.warc.gz
echo "wrote data/sample-docs.warc.gz: $(grep -c ' URL:' "$work/wget.log") responses, $(du -h data/sample-docs.warc.gz | cut -f1)"
