#!/usr/bin/env bash
# Installs everything neardup needs to build and test, from Debian bookworm packages.
# Idempotent: packages already present are left alone; safe to run on every build.
#   scripts/install-deps.sh              what building and testing need
#   scripts/install-deps.sh experiments  also what the experiments' peer comparison needs (numpy)
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config ninja-build
  protobuf-compiler libprotobuf-dev   # signatures, partition maps, configs (text format)
  libleveldb-dev libsnappy-dev        # persistent shard and group stores (LevelDB links snappy)
  libeigen3-dev                       # vectorised kernels (tiers)
  libspdlog-dev libfmt-dev            # logging
  libgtest-dev libgmock-dev           # unit tests
  libbenchmark-dev                    # micro benchmarks
  libxxhash-dev                       # XXH3 shingle and word hashes
  libcli11-dev                        # command line of the neardup binary
  libmodest-dev                       # MyHTML: HTML5 parsing of crawled pages
  libsimdjson-dev                     # JSON Lines crawl records
  libisal-dev                         # ISA-L's igzip: .warc.gz crawls (multi-member gzip), inflated faster than by zlib
  zlib1g-dev                          # gzip- and deflate-encoded HTTP bodies inside WARC records
  libgoogle-perftools-dev             # tcmalloc: the neardup binary's allocator
  libboost1.81-dev                    # Boost.Asio: the servers and clients between the tiers
  libssl-dev                          # OpenSSL: mutual TLS between the tiers, neardup certs init
  wget                                # tests/warc_test.cc crawls a local site into a WARC with it
  python3-scrapy                      # clients/scrapy: the Scrapy middleware's end-to-end test
  prometheus                          # promtool: a test checks the /metrics exposition
  clang libclang-rt-14-dev            # libFuzzer (clang's runtime) for the fuzz targets: scripts/fuzz.sh
  gnuplot-nox                         # PNG plots of experiments/results/*.csv (a test draws one)
)
if [ "${1:-}" = "experiments" ]; then
  PACKAGES+=(python3-numpy)           # experiments/peers.sh: the Python tool measured beside neardup imports it
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
