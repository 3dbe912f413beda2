#include "baseline/all_pairs.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include "common/run_on_threads.h"
#include "document/shingle.h"

namespace neardup::baseline {
namespace {

using Clock = std::chrono::steady_clock;

// Safety margin on every filter bound: filters err towards keeping a candidate; JaccardAtLeast()
// alone decides.
constexpr double kEps = 1e-9;

// Smallest overlap a pair of sizes sx, sy can have and still pass JaccardAtLeast.
inline uint32_t MinOverlap(uint32_t sx, uint32_t sy, double t) {
  const double s = static_cast<double>(sx) + sy;
  const double v = std::ceil(t * s / (1 + t) - kEps * s - kEps);
  return v < 1 ? 1u : static_cast<uint32_t>(v);
}
// Smallest size a (smaller or equal) partner of a set of size s can have.
inline uint32_t MinPartnerSize(uint32_t s, double t) {
  const double v = std::ceil((t - kEps) * s - kEps);
  return v < 1 ? 1u : static_cast<uint32_t>(v);
}
// Probing prefix of a set of size s (in the full token order).
inline uint32_t ProbePrefix(uint32_t s, double t) { return s - MinPartnerSize(s, t) + 1; }
// Indexing prefix: y is only ever probed by sets at least as large.
inline uint32_t IndexPrefix(uint32_t s, double t) {
  const double v = std::ceil(2 * t / (1 + t) * s - kEps * 2 * s - kEps);
  const uint32_t need = v < 1 ? 1u : static_cast<uint32_t>(v);
  return s - std::min(need, s) + 1;
}

int ThreadCount(int requested) {
  if (requested > 0) return requested;
  const unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : static_cast<int>(hc);
}

// Runs f(worker) on `threads` threads (the caller's thread is worker 0).
template <typename F>
void ParallelRun(int threads, F&& f) {
  RunOnThreads(threads, "nd-baseline", f);
}

// LSD radix sort of 64-bit keys whose top kBucketBits bits are equal, 11 bits a pass (a count
// array that stays in L1). `tmp` is scratch of the same size.
void RadixSort(std::vector<uint64_t>& a, std::vector<uint64_t>& tmp) {
  tmp.resize(a.size());
  uint32_t count[1 << 11];
  for (int shift = 0; shift < 64 - 6; shift += 11) {
    std::fill(std::begin(count), std::end(count), 0);
    for (uint64_t v : a) ++count[(v >> shift) & 0x7FF];
    uint32_t sum = 0;
    for (auto& c : count) { const uint32_t x = c; c = sum; sum += x; }
    for (uint64_t v : a) tmp[count[(v >> shift) & 0x7FF]++] = v;
    a.swap(tmp);
  }
}

constexpr int kBucketBits = 6;  // RadixSort relies on this
constexpr int kGather = 4;      // buckets gathered per scan over the sets
constexpr int kBuckets = 1 << kBucketBits;
inline uint32_t BucketOf(uint64_t h) { return static_cast<uint32_t>(h >> (64 - kBucketBits)); }

// Open-addressing map from a frequent token's hash to its rank.
class RankTable {
 public:
  explicit RankTable(uint64_t n) {
    uint64_t cap = 16;
    while (cap < n + n / 2) cap <<= 1;
    mask_ = cap - 1;
    keys_.assign(cap, 0);
    vals_.assign(cap, 0);
  }
  void Insert(uint64_t h, uint32_t rank) {
    uint64_t i = Slot(h);
    while (vals_[i] != 0) i = (i + 1) & mask_;
    keys_[i] = h;
    vals_[i] = rank + 1;
  }
  // rank + 1, or 0 when h is not frequent.
  uint32_t Find(uint64_t h) const {
    uint64_t i = Slot(h);
    for (;;) {
      const uint32_t v = vals_[i];
      if (v == 0 || keys_[i] == h) return v;
      i = (i + 1) & mask_;
    }
  }
  void Prefetch(uint64_t h) const {
    __builtin_prefetch(&keys_[Slot(h)]);
    __builtin_prefetch(&vals_[Slot(h)]);
  }

 private:
  uint64_t Slot(uint64_t h) const { return (h * 0x9E3779B97F4A7C15ull) >> 7 & mask_; }
  uint64_t mask_;
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> vals_;
};

struct Reduced {
  std::vector<std::vector<uint32_t>> ranks;  // frequent tokens of each set, ascending rank
  std::vector<uint32_t> size;                // full set size
  std::vector<uint32_t> n1;                  // tokens of the set that occur nowhere else
};

// Steps 1 of the header: exact frequencies, global order, re-encoding (frees `sets`).
Reduced Reencode(std::vector<std::vector<uint64_t>>& sets, int threads, AllPairsStats* st) {
  const size_t n = sets.size();
  Reduced r;
  r.size.resize(n);
  r.n1.resize(n);
  r.ranks.resize(n);
  for (size_t i = 0; i < n; ++i) {
    r.size[i] = static_cast<uint32_t>(sets[i].size());
    st->tokens += sets[i].size();
  }
  // Frequent tokens per bucket, sorted by hash, with their document frequency.
  std::vector<std::vector<std::pair<uint64_t, uint32_t>>> frequent(kBuckets);
  ParallelRun(threads, [&](int w) {
    const int lo = kBuckets * w / threads, hi = kBuckets * (w + 1) / threads;
    if (lo >= hi) return;
    std::vector<uint32_t> cursor(n);
    for (size_t i = 0; i < n; ++i) {
      cursor[i] = static_cast<uint32_t>(
          std::lower_bound(sets[i].begin(), sets[i].end(), static_cast<uint64_t>(lo) << (64 - kBucketBits)) -
          sets[i].begin());
    }
    std::vector<uint64_t> keys[kGather], tmp;
    for (int b0 = lo; b0 < hi; b0 += kGather) {
      const int nb = std::min(kGather, hi - b0);
      for (auto& k : keys) k.clear();
      // One scan over the sets fills nb buckets: each set's slice of a bucket is contiguous.
      const uint32_t end_bucket = static_cast<uint32_t>(b0 + nb);
      for (size_t i = 0; i < n; ++i) {
        const auto& s = sets[i];
        uint32_t c = cursor[i];
        for (; c < s.size(); ++c) {
          const uint32_t bucket = BucketOf(s[c]);
          if (bucket >= end_bucket) break;
          keys[bucket - b0].push_back(s[c]);
        }
        cursor[i] = c;
      }
      for (int g = 0; g < nb; ++g) {
        RadixSort(keys[g], tmp);
        auto& out = frequent[b0 + g];
        const auto& k = keys[g];
        for (size_t i = 0; i < k.size();) {
          size_t j = i + 1;
          while (j < k.size() && k[j] == k[i]) ++j;
          if (j - i >= 2) out.emplace_back(k[i], static_cast<uint32_t>(j - i));
          i = j;
        }
      }
    }
  });
  // Rank by (frequency, hash): a counting sort by frequency, stable in hash order.
  std::vector<uint64_t> offset(n + 2, 0);
  uint64_t nfreq = 0;
  for (const auto& f : frequent) {
    for (const auto& [h, df] : f) ++offset[df + 1];
    nfreq += f.size();
  }
  st->frequent_tokens = nfreq;
  for (size_t i = 1; i < offset.size(); ++i) offset[i] += offset[i - 1];
  RankTable table(nfreq);
  for (auto& f : frequent) {
    for (const auto& [h, df] : f) table.Insert(h, static_cast<uint32_t>(offset[df]++));
    std::vector<std::pair<uint64_t, uint32_t>>().swap(f);
  }
  // Re-encode every set as its frequent tokens' ranks; free the 64-bit hashes.
  std::atomic<size_t> next{0};
  ParallelRun(threads, [&](int) {
    constexpr size_t kChunk = 256;
    for (size_t start; (start = next.fetch_add(kChunk)) < n;) {
      for (size_t i = start; i < std::min(n, start + kChunk); ++i) {
        auto& s = sets[i];
        std::vector<uint32_t> ranks;
        constexpr size_t kAhead = 8;
        for (size_t k = 0; k < std::min(kAhead, s.size()); ++k) table.Prefetch(s[k]);
        for (size_t k = 0; k < s.size(); ++k) {
          if (k + kAhead < s.size()) table.Prefetch(s[k + kAhead]);
          const uint32_t v = table.Find(s[k]);
          if (v != 0) ranks.push_back(v - 1);
        }
        std::sort(ranks.begin(), ranks.end());
        r.n1[i] = static_cast<uint32_t>(s.size() - ranks.size());
        ranks.shrink_to_fit();
        r.ranks[i] = std::move(ranks);
        std::vector<uint64_t>().swap(s);
      }
    }
  });
  return r;
}

struct Posting {
  uint32_t pos;  // position of the set in size order
  uint32_t j;    // position of the token in that set's full order
};

// The number of set's ranks (past its n1 singleton tokens) in a prefix of full_prefix tokens.
uint32_t PrefixCount(const Reduced& r, uint32_t set, uint32_t full_prefix) {
  const uint32_t n1 = r.n1[set];
  if (full_prefix <= n1) return 0;
  return std::min<uint32_t>(full_prefix - n1, static_cast<uint32_t>(r.ranks[set].size()));
}

// The non-empty sets in size order, and their index prefixes' postings by rank (CSR: rank k's
// postings are postings[off[k] .. off[k + 1]), in size order).
struct SizeOrderIndex {
  std::vector<uint32_t> order;  // position in size order -> set
  std::vector<uint32_t> sz;     // position in size order -> size
  std::vector<uint64_t> off;
  std::vector<Posting> postings;
};

SizeOrderIndex BuildSizeOrderIndex(const Reduced& r, double t) {
  SizeOrderIndex x;
  std::vector<uint32_t>& order = x.order;
  order.reserve(r.size.size());
  for (uint32_t i = 0; i < r.size.size(); ++i) {
    if (r.size[i] > 0) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return r.size[a] < r.size[b]; });
  const uint32_t m = static_cast<uint32_t>(order.size());
  x.sz.resize(m);
  for (uint32_t p = 0; p < m; ++p) x.sz[p] = r.size[order[p]];
  uint64_t max_rank = 0;
  for (uint32_t p = 0; p < m; ++p) {
    const auto& rk = r.ranks[order[p]];
    if (!rk.empty()) max_rank = std::max<uint64_t>(max_rank, rk.back() + 1ull);
  }
  std::vector<uint64_t>& off = x.off;
  off.assign(max_rank + 1, 0);
  for (uint32_t p = 0; p < m; ++p) {
    const uint32_t set = order[p];
    const uint32_t c = PrefixCount(r, set, IndexPrefix(x.sz[p], t));
    for (uint32_t k = 0; k < c; ++k) ++off[r.ranks[set][k] + 1];
  }
  for (size_t i = 1; i < off.size(); ++i) off[i] += off[i - 1];
  x.postings.resize(off.back());
  std::vector<uint64_t> fill(off.begin(), off.end() - 1);
  for (uint32_t p = 0; p < m; ++p) {
    const uint32_t set = order[p];
    const uint32_t c = PrefixCount(r, set, IndexPrefix(x.sz[p], t));
    for (uint32_t k = 0; k < c; ++k) x.postings[fill[r.ranks[set][k]]++] = Posting{p, r.n1[set] + k};
  }
  return x;
}

}  // namespace

std::vector<SimilarPair> ExactAllPairs(std::vector<std::vector<uint64_t>> sets, const AllPairsOptions& options,
                                       AllPairsStats* stats) {
  AllPairsStats local;
  AllPairsStats* st = stats ? stats : &local;
  *st = AllPairsStats{};
  const double t = options.threshold;
  const int threads = ThreadCount(options.threads);
  const auto t0 = Clock::now();
  st->sets = sets.size();
  Reduced r = Reencode(sets, threads, st);
  sets.clear();
  const auto t1 = Clock::now();
  st->order_seconds = std::chrono::duration<double>(t1 - t0).count();

  const SizeOrderIndex index = BuildSizeOrderIndex(r, t);
  const std::vector<uint32_t>& order = index.order;
  const std::vector<uint32_t>& sz = index.sz;
  const std::vector<uint64_t>& off = index.off;
  const std::vector<Posting>& postings = index.postings;
  const uint32_t m = static_cast<uint32_t>(order.size());
  st->indexed_entries = postings.size();

  // Probe and verify, in parallel over x.
  std::vector<std::vector<SimilarPair>> found(threads);
  std::vector<uint64_t> cand_count(threads, 0);
  std::atomic<uint32_t> next{0};
  ParallelRun(threads, [&](int w) {
    std::vector<int32_t> acc(m, 0);
    std::vector<uint32_t> touched;
    constexpr uint32_t kChunk = 512;
    for (uint32_t start; (start = next.fetch_add(kChunk)) < m;) {
      for (uint32_t px = start; px < std::min(m, start + kChunk); ++px) {
        const uint32_t x = order[px], sx = sz[px], n1x = r.n1[x];
        const auto& rx = r.ranks[x];
        const uint32_t pc = PrefixCount(r, x, ProbePrefix(sx, t));
        const uint32_t min_size = MinPartnerSize(sx, t);
        touched.clear();
        for (uint32_t i = 0; i < pc; ++i) {
          const Posting* b = postings.data() + off[rx[i]];
          const Posting* e = postings.data() + off[rx[i] + 1];
          // Length filter: skip partners smaller than t|x| (postings are in size order).
          b = std::partition_point(b, e, [&](const Posting& q) { return sz[q.pos] < min_size; });
          const uint32_t ix = n1x + i;
          for (; b != e && b->pos < px; ++b) {
            const uint32_t py = b->pos;
            int32_t& a = acc[py];
            if (a < 0) continue;
            if (a == 0) touched.push_back(py);
            const uint32_t sy = sz[py];
            const uint32_t bound = static_cast<uint32_t>(a) + 1 + std::min(sx - ix - 1, sy - b->j - 1);
            if (bound >= MinOverlap(sx, sy, t)) ++a; else a = -1;
          }
        }
        for (uint32_t py : touched) {
          if (acc[py] > 0) {
            const uint32_t y = order[py];
            ++cand_count[w];
            const size_t o = Overlap(std::span<const uint32_t>(rx), std::span<const uint32_t>(r.ranks[y]));
            if (JaccardAtLeast(o, sx, sz[py], t)) {
              const double sim = static_cast<double>(o) / static_cast<double>(sx + sz[py] - o);
              found[w].push_back(SimilarPair{std::min(x, y), std::max(x, y), sim});
            }
          }
          acc[py] = 0;
        }
      }
    }
  });
  std::vector<SimilarPair> out;
  for (auto& f : found) {
    out.insert(out.end(), f.begin(), f.end());
    std::vector<SimilarPair>().swap(f);
  }
  std::sort(out.begin(), out.end());
  for (uint64_t c : cand_count) st->candidates += c;
  st->pairs = out.size();
  st->join_seconds = std::chrono::duration<double>(Clock::now() - t1).count();
  return out;
}

std::vector<SimilarPair> BruteForceAllPairs(std::span<const std::vector<uint64_t>> sets, double threshold) {
  std::vector<SimilarPair> out;
  for (uint32_t a = 0; a < sets.size(); ++a) {
    for (uint32_t b = a + 1; b < sets.size(); ++b) {
      const size_t o = Overlap(sets[a], sets[b]);
      if (JaccardAtLeast(o, sets[a].size(), sets[b].size(), threshold)) {
        out.push_back(SimilarPair{a, b, static_cast<double>(o) / static_cast<double>(sets[a].size() + sets[b].size() - o)});
      }
    }
  }
  return out;
}

}  // namespace neardup::baseline
