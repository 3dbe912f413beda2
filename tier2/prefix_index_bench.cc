// Micro benchmarks of the shard's in-memory index (Google Benchmark). Not a test: run
//   build/bench/prefix_index_bench [--benchmark_filter=Compact]
// and compare two builds back to back on the same machine.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "tier2/prefix_index.h"

namespace neardup::tier2 {
namespace {

constexpr uint32_t kTokensPerPage = 40;  // bench tier2's mean prefix at threshold 0.9

std::vector<uint64_t> PageTokens(std::mt19937_64& rng) {
  std::vector<uint64_t> t(kTokensPerPage);
  for (uint64_t& x : t) x = rng();
  return t;
}

// One growth compaction: an index of `pages` resident pages built in one go, then 1/32 more pages
// added (the overflow a compaction waits for), then Compact(). Only Compact() is timed.
void BM_Compact(benchmark::State& state) {
  const uint32_t pages = static_cast<uint32_t>(state.range(0));
  const uint32_t added = pages / 32;
  std::mt19937_64 rng(7);
  std::vector<std::vector<uint64_t>> tokens(pages + added);
  for (auto& t : tokens) t = PageTokens(rng);
  const int bits = PrefixIndex::BucketBitsFor(uint64_t{pages + added} * kTokensPerPage);
  for (auto _ : state) {
    state.PauseTiming();
    PrefixIndex index = PrefixIndex::Build(bits, [&](const PrefixIndex::BulkVisitor& visit) {
      for (uint32_t s = 0; s < pages; ++s) visit(s, tokens[s]);
    });
    for (uint32_t s = pages; s < pages + added; ++s) index.Add(s, tokens[s]);
    state.ResumeTiming();
    index.Compact(/*purge=*/false);
    benchmark::DoNotOptimize(index.main_postings());
  }
  state.counters["postings_moved/s"] =
      benchmark::Counter(static_cast<double>(uint64_t{pages + added} * kTokensPerPage), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Compact)->Arg(50'000)->Arg(250'000)->Unit(benchmark::kMillisecond);

// Adding pages to the overflow table (the shard's Apply, index part).
void BM_Add(benchmark::State& state) {
  std::mt19937_64 rng(11);
  std::vector<std::vector<uint64_t>> tokens(1000);
  for (auto& t : tokens) t = PageTokens(rng);
  for (auto _ : state) {
    state.PauseTiming();
    PrefixIndex index(PrefixIndex::BucketBitsFor(1'000'000));
    state.ResumeTiming();
    for (uint32_t s = 0; s < tokens.size(); ++s) index.Add(s, tokens[s]);
    benchmark::DoNotOptimize(index.overflow_postings());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * tokens.size()));
}
BENCHMARK(BM_Add);

// Adding pages between two compactions of a grown index, as a shard does: the overflow table has
// the size the previous round of additions gave it (Compact keeps it), many times the cache.
// Only the Add() calls are timed.
void BM_AddToGrownIndex(benchmark::State& state) {
  const uint32_t pages = static_cast<uint32_t>(state.range(0));
  const uint32_t added = pages / 32;
  std::mt19937_64 rng(17);
  std::vector<std::vector<uint64_t>> tokens(pages + 2 * added);
  for (auto& t : tokens) t = PageTokens(rng);
  const int bits = PrefixIndex::BucketBitsFor(uint64_t{pages + 2 * added} * kTokensPerPage);
  for (auto _ : state) {
    state.PauseTiming();
    PrefixIndex index = PrefixIndex::Build(bits, [&](const PrefixIndex::BulkVisitor& visit) {
      for (uint32_t s = 0; s < pages; ++s) visit(s, tokens[s]);
    });
    for (uint32_t s = pages; s < pages + added; ++s) index.Add(s, tokens[s]);
    index.Compact(/*purge=*/false);
    state.ResumeTiming();
    for (uint32_t s = pages + added; s < pages + 2 * added; ++s) index.Add(s, tokens[s]);
    benchmark::DoNotOptimize(index.overflow_postings());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * added));
}
BENCHMARK(BM_AddToGrownIndex)->Arg(250'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

// Probing: Collect() for a page's prefix against a compacted index of `pages` pages.
void BM_Collect(benchmark::State& state) {
  const uint32_t pages = static_cast<uint32_t>(state.range(0));
  std::mt19937_64 rng(13);
  std::vector<std::vector<uint64_t>> tokens(pages);
  for (auto& t : tokens) t = PageTokens(rng);
  PrefixIndex index = PrefixIndex::Build(PrefixIndex::BucketBitsFor(uint64_t{pages} * kTokensPerPage),
                                         [&](const PrefixIndex::BulkVisitor& visit) {
                                           for (uint32_t s = 0; s < pages; ++s) visit(s, tokens[s]);
                                         });
  std::vector<uint32_t> slots;
  uint32_t next = 0;
  for (auto _ : state) {
    slots.clear();
    index.Collect(tokens[next], &slots);
    next = (next + 7919) % pages;
    benchmark::DoNotOptimize(slots.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_Collect)->Arg(250'000);

}  // namespace
}  // namespace neardup::tier2

BENCHMARK_MAIN();
