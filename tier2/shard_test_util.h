// Helpers the shard's tests share (tier2/shard_*_test.cc): signatures from hashes, shard options
// for tests, a corpus of near-copy families, and the exactness check against brute force.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/url_hash_map.h"
#include "document/shingle.h"
#include "document/signature.h"
#include "testing/signatures.h"
#include "testing/temp_dir.h"
#include "tier2/prefix_filter.h"
#include "tier2/shard.h"

namespace neardup::tier2::shard_test {

namespace fs = std::filesystem;

// "prefix" + number (GCC 12 warns falsely on const char* + std::to_string()).
inline std::string Name(std::string prefix, uint64_t n) {
  prefix += std::to_string(n);
  return prefix;
}

using ::neardup::test::TempDir;

inline pb::PageSignature MakeSig(const std::string& url, std::vector<uint64_t> hashes, int dims = 3) {
  return ::neardup::test::SignatureOf(url, std::move(hashes), dims);
}

inline std::vector<ShardPage> Pages(const std::vector<pb::PageSignature>& sigs, bool home = true) {
  std::vector<ShardPage> out;
  for (const auto& s : sigs) out.push_back(ShardPage{&s, home});
  return out;
}

inline ShardOptions Options(const std::string& path, double min_threshold = 0.5, uint32_t c = 2) {
  ShardOptions o;
  o.path = path;
  o.dims = 3;
  o.min_threshold = min_threshold;
  o.prefix_overlap = c;
  o.sync = false;
  o.expected_pages = 256;
  o.max_matches_per_page = 0;  // every pair, as the brute force finds them (the cap's tests set one)
  return o;
}

// A corpus shaped to stress the filters: families of near-copies whose Jaccard to the family's
// source spreads across 0.4..1.0, with sizes drawn from `sizes`.
inline std::vector<pb::PageSignature> Corpus(uint64_t seed, int n, const std::vector<int>& sizes, int family_size,
                                      const std::string& prefix) {
  std::mt19937_64 rng(seed);
  std::vector<pb::PageSignature> out;
  std::vector<uint64_t> base;
  for (int i = 0; i < n; ++i) {
    if (i % family_size == 0) {
      base.assign(static_cast<size_t>(sizes[rng() % sizes.size()]), 0);
      for (auto& h : base) h = rng();
    }
    std::vector<uint64_t> page = base;
    if (i % family_size != 0 && !page.empty()) {
      // Replace a share of the tokens: Jaccard = (n - r) / (n + r).
      const size_t r = rng() % (page.size() / 3 + 2);
      for (size_t k = 0; k < r && k < page.size(); ++k) page[rng() % page.size()] = rng();
      if (rng() % 4 == 0) page.push_back(rng());  // sizes differ by one
    }
    out.push_back(MakeSig(Name(prefix, i), page));
  }
  return out;
}

struct Pair {
  std::string a, b;  // urls, a < b
  bool operator<(const Pair& o) const { return a != o.a ? a < o.a : b < o.b; }
  bool operator==(const Pair& o) const { return a == o.a && b == o.b; }
};

inline std::set<Pair> MakePairSet(const std::vector<std::pair<std::string, std::string>>& v) {
  std::set<Pair> s;
  for (const auto& [a, b] : v) s.insert(a < b ? Pair{a, b} : Pair{b, a});
  return s;
}

// Every pair the brute force finds between batch and resident, and within the batch.
inline std::set<Pair> BruteForce(const std::vector<pb::PageSignature>& resident, const std::vector<pb::PageSignature>& batch,
                          double t) {
  std::vector<std::pair<std::string, std::string>> v;
  auto span = [](const pb::PageSignature& s) {
    return std::span<const uint64_t>(s.shingles().data(), static_cast<size_t>(s.shingles_size()));
  };
  for (size_t i = 0; i < batch.size(); ++i) {
    for (const auto& r : resident) {
      if (r.url() == batch[i].url()) continue;
      if (JaccardAtLeast(Overlap(span(batch[i]), span(r)), batch[i].shingles_size(), r.shingles_size(), t)) {
        v.emplace_back(batch[i].url(), r.url());
      }
    }
    for (size_t j = i + 1; j < batch.size(); ++j) {
      if (JaccardAtLeast(Overlap(span(batch[i]), span(batch[j])), batch[i].shingles_size(),
                         batch[j].shingles_size(), t)) {
        v.emplace_back(batch[i].url(), batch[j].url());
      }
    }
  }
  return MakePairSet(v);
}

inline std::set<Pair> Found(const std::vector<pb::PageSignature>& batch, const CompareResult& r) {
  std::vector<std::pair<std::string, std::string>> v;
  for (const auto& m : r.resident) v.emplace_back(batch[m.page].url(), m.url);
  for (const auto& m : r.in_batch) v.emplace_back(batch[m.a].url(), batch[m.b].url());
  return MakePairSet(v);
}

// Loads `resident` in batches of 97, then compares `batch` at every threshold and checks the
// answer against brute force, pair for pair, with exact similarities in range.
inline void CheckExact(const ShardOptions& options, const std::vector<pb::PageSignature>& resident,
                const std::vector<pb::PageSignature>& batch, const std::vector<double>& thresholds) {
  auto shard = Shard::Open(options);
  ASSERT_TRUE(shard.ok()) << shard.status().ToString();
  for (size_t i = 0; i < resident.size(); i += 97) {
    std::vector<pb::PageSignature> part(resident.begin() + i, resident.begin() + std::min(resident.size(), i + 97));
    auto pages = Pages(part);
    ASSERT_TRUE((*shard)->Apply(pages, {}).ok());
  }
  auto pages = Pages(batch);
  for (double t : thresholds) {
    CompareResult r;
    ASSERT_TRUE((*shard)->CompareBatch(pages, t, &r).ok());
    EXPECT_EQ(Found(batch, r), BruteForce(resident, batch, t)) << "threshold " << t;
    for (const auto& m : r.resident) EXPECT_GE(m.similarity, t - 1e-9);
    for (const auto& m : r.in_batch) EXPECT_GE(m.similarity, t - 1e-9);
  }
}

// CheckExact with the first `resident` pages of `all` resident and the rest as the batch.
inline void CheckExactSplit(const ShardOptions& options, const std::vector<pb::PageSignature>& all, size_t resident,
                     const std::vector<double>& thresholds) {
  std::vector<pb::PageSignature> r(all.begin(), all.begin() + resident), b(all.begin() + resident, all.end());
  CheckExact(options, r, b, thresholds);
}

inline const std::vector<double> kThresholds = {0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0};

}  // namespace neardup::tier2::shard_test
