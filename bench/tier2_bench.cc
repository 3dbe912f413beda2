#include "bench/tier2_bench.h"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>

#include "baseline/all_pairs.h"
#include "common/json_write.h"
#include "common/progress.h"
#include "document/crawl_signer.h"
#include "document/shingle.h"
#include "gencrawl/crawl_generator.h"
#include "tier2/shard.h"

namespace neardup::bench {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::span<const uint64_t> Set(const pb::PageSignature& s) {
  return {s.shingles().data(), static_cast<size_t>(s.shingles_size())};
}

struct Growth {
  uint64_t resident;
  uint64_t next_pages;
  double incremental_s;
  double recompute_s;
};

class Tier2Bench {
 public:
  explicit Tier2Bench(const Tier2BenchOptions& a) : a_(a), r_(a) {}
  int Run();

 private:
  // What the run measured, printed and written at the end.
  struct Figures {
    std::vector<Growth> growth;
    double load_s = 0, load_compare = 0, load_apply = 0;
    uint64_t resident = 0;  // resident pages when the timed batches start
    double compare_s = 0, apply_s = 0;
    tier2::CompareStats sum;
    uint64_t pages = 0, batch_pairs = 0;
    double brute_s = 0, brute_indexed_s = 0;
    uint64_t brute_pairs = 0, brute_mismatch = 0, brute_done = 0;
    tier2::ShardStats st;    // after the timed batches
    uint64_t disk = 0, final_pages = 0;
    uint64_t rss_before = 0, rss_after = 0;
    tier2::ShardStats rst;   // after the restart
  };

  Status LoadSignatures(uint64_t needed);
  // The shard, opened empty, with the configuration's tier2 section cut for the threshold.
  Status OpenShard();
  // CompareBatch + Apply of sigs_[begin, end); adds the times.
  Status Process(size_t begin, size_t end, double* compare_s, double* apply_s, tier2::CompareResult* result);
  Status Recompute(size_t end, double* seconds);
  // Step 2: loads --resident pages batch by batch from sigs_[next_, ..), with the growth milestones.
  Status Load();
  // Step 3: the timed batches; step 4 on the first.
  Status TimeBatches();
  // Step 4: the first sample of sigs_[begin, end) against every resident page by brute force.
  Status BruteForce(size_t begin, size_t end);
  // Step 5: the shard closed and reopened, the RSS it adds.
  Status Restart();
  void Print() const;
  Status WriteCsv() const;
  void WriteReport() const;

  const Tier2BenchOptions& a_;
  const Tier2BenchOptions& r_;  // the resolved configuration (threshold, signer, reader, threads, config)
  std::vector<pb::PageSignature> sigs_;
  std::unordered_map<std::string, uint32_t> current_;  // url -> index in sigs_ of the resident version
  std::unique_ptr<tier2::Shard> shard_;
  tier2::ShardOptions shard_options_;
  size_t next_ = 0;  // the next page of sigs_ to process
  Figures f_;
};

Status Tier2Bench::LoadSignatures(uint64_t needed) {
  std::string input = a_.input;
  if (input.empty()) {
    // Distinct URLs are ~82% of the generated records; aim 25% over what the run needs.
    const uint64_t records = needed * 5 / 4 * 100 / 82;
    input = a_.workdir + "/crawl-" + std::to_string(records) + "-seed" + std::to_string(a_.gen_seed) + ".jsonl";
    if (!fs::exists(input + ".done")) {
      spdlog::info("bench tier2: generating {} records into {}", records, input);
      std::FILE* f = std::fopen(input.c_str(), "wb");
      if (!f) return IoError("cannot write " + input);
      gencrawl::CrawlGenOptions g;
      g.pages = records;
      g.seed = a_.gen_seed;
      g.shingle_k = r_.signer.k;
      Status s = gencrawl::GenerateCrawl(g, f, nullptr, nullptr);
      std::fclose(f);
      RETURN_IF_ERROR(s);
      std::ofstream(input + ".done") << "ok\n";
    }
  }
  CrawlSignerOptions so;
  so.signer = r_.signer;
  so.reader = r_.reader;
  so.threads = r_.threads;
  so.progress_label = "bench tier2: signatures";
  std::set<std::string> urls;  // distinct URLs taken so far (bounded by `needed`)
  uint64_t taken = 0;
  so.keep = [&](const CrawlRecord& rec) {
    if (!rec.has_content() || urls.size() >= needed) return false;
    urls.insert(rec.url);
    ++taken;
    return true;
  };
  sigs_.reserve(needed * 9 / 8);
  RETURN_IF_ERROR(SignCrawl(input, so, [&](CrawlRecord& rec, PageFeatures& f) {
    if (f.shingles.empty()) return Status::Ok();
    sigs_.push_back(ToProto(rec.url, f, r_.signer));
    return Status::Ok();
  }));
  spdlog::info("bench tier2: {} content pages signed ({} distinct URLs)", sigs_.size(), urls.size());
  return Status::Ok();
}

Status Tier2Bench::Process(size_t begin, size_t end, double* compare_s, double* apply_s,
                           tier2::CompareResult* result) {
  std::vector<tier2::ShardPage> pages;
  pages.reserve(end - begin);
  for (size_t i = begin; i < end; ++i) pages.push_back({&sigs_[i], true});
  auto t0 = Clock::now();
  RETURN_IF_ERROR(shard_->CompareBatch(pages, r_.threshold, result));
  *compare_s += Since(t0);
  t0 = Clock::now();
  RETURN_IF_ERROR(shard_->Apply(pages, {}));
  *apply_s += Since(t0);
  for (size_t i = begin; i < end; ++i) current_[sigs_[i].url()] = static_cast<uint32_t>(i);
  return Status::Ok();
}

// The non-incremental alternative: every resident page plus sigs_[.., end) joined from scratch.
Status Tier2Bench::Recompute(size_t end, double* seconds) {
  std::unordered_map<std::string_view, uint32_t> latest;
  for (size_t i = 0; i < end; ++i) latest[sigs_[i].url()] = static_cast<uint32_t>(i);
  std::vector<std::vector<uint64_t>> sets;
  sets.reserve(latest.size());
  for (const auto& [u, i] : latest) sets.emplace_back(sigs_[i].shingles().begin(), sigs_[i].shingles().end());
  const auto t0 = Clock::now();
  baseline::AllPairsStats st;
  baseline::ExactAllPairs(std::move(sets), {.threshold = r_.threshold, .threads = 1}, &st);
  *seconds = Since(t0);
  return Status::Ok();
}

int Tier2Bench::Run() {
  const uint64_t timed = static_cast<uint64_t>(a_.batch) * a_.batches;
  std::error_code ec;
  fs::create_directories(a_.workdir, ec);
  // The growth milestones take ~2% of the resident count on top of the timed batches.
  const uint64_t needed = a_.resident + timed + (a_.growth ? a_.resident / 40 : 0) + a_.batch;
  Status s = LoadSignatures(needed);
  if (s.ok()) s = OpenShard();
  if (s.ok()) s = Load();
  if (s.ok()) s = TimeBatches();
  if (s.ok()) s = Restart();
  if (!s.ok()) {
    spdlog::error("bench tier2: {}", s.ToString());
    return 1;
  }
  Print();
  if (Status w = WriteCsv(); !w.ok()) {
    spdlog::error("bench tier2: {}", w.message());
    return 1;
  }
  WriteReport();
  return f_.brute_mismatch == 0 ? 0 : 1;
}

Status Tier2Bench::OpenShard() {
  std::error_code ec;
  // The configuration's tier2 section, with the index cut for the benchmark's threshold.
  shard_options_ = tier2::ShardOptionsFromConfig(r_.config, a_.workdir + "/shard");
  fs::remove_all(shard_options_.path, ec);
  shard_options_.dims = static_cast<uint32_t>(r_.signer.dims);
  shard_options_.shingle_k = static_cast<uint32_t>(r_.signer.k);
  // The exact engine's cost, every pair (step 4 checks them against brute force, pair for pair).
  shard_options_.max_matches_per_page = 0;
  shard_options_.min_threshold = r_.threshold;
  if (a_.prefix_overlap > 0) shard_options_.prefix_overlap = a_.prefix_overlap;
  shard_options_.max_batch_pages = std::max(shard_options_.max_batch_pages, a_.batch);
  shard_options_.expected_pages = a_.resident;
  ASSIGN_OR_RETURN(shard_, tier2::Shard::Open(shard_options_));
  return Status::Ok();
}

Status Tier2Bench::Load() {
  std::vector<uint64_t> milestones;
  if (a_.growth) {
    for (uint64_t m = 10000; m < a_.resident; m = m * 10) {
      for (uint64_t f : {1, 2, 5}) if (m * f < a_.resident) milestones.push_back(m * f);
    }
    milestones.push_back(a_.resident);
  }
  size_t mi = 0;
  tier2::CompareResult result;
  Progress progress("bench tier2: load", a_.resident);
  while (next_ < sigs_.size()) {
    const uint64_t resident = shard_->Stats().resident_pages;
    if (mi < milestones.size() && resident >= milestones[mi]) {
      const size_t chunk = std::max<size_t>(1, resident / 100);
      if (next_ + chunk > sigs_.size()) break;
      double inc = 0, cmp = 0, app = 0;
      for (size_t b = next_; b < next_ + chunk; b += a_.batch) {
        RETURN_IF_ERROR(Process(b, std::min(next_ + chunk, b + a_.batch), &cmp, &app, &result));
      }
      inc = cmp + app;
      double re = 0;
      RETURN_IF_ERROR(Recompute(next_ + chunk, &re));
      f_.growth.push_back({resident, chunk, inc, re});
      spdlog::info("bench tier2: growth at {} resident: next {} pages incrementally {:.3f} s, from scratch {:.3f} s "
                   "(ratio {:.1f})", resident, chunk, inc, re, re / inc);
      next_ += chunk;
      ++mi;
      continue;
    }
    if (resident >= a_.resident) break;
    const size_t end = std::min(sigs_.size(), next_ + a_.batch);
    RETURN_IF_ERROR(Process(next_, end, &f_.load_compare, &f_.load_apply, &result));
    next_ = end;
    progress.Update(shard_->Stats().resident_pages, shard_->Stats().resident_pages);
  }
  f_.load_s = progress.Finish(shard_->Stats().resident_pages);
  f_.resident = shard_->Stats().resident_pages;
  if (f_.resident < a_.resident) {
    spdlog::warn("bench tier2: the input holds only {} distinct pages; measuring at that size", f_.resident);
  }
  return Status::Ok();
}

Status Tier2Bench::TimeBatches() {
  tier2::CompareResult result;
  for (int b = 0; b < a_.batches && next_ < sigs_.size(); ++b) {
    const size_t end = std::min(sigs_.size(), next_ + a_.batch);
    if (b == 0 && a_.brute_pages > 0) RETURN_IF_ERROR(BruteForce(next_, end));
    RETURN_IF_ERROR(Process(next_, end, &f_.compare_s, &f_.apply_s, &result));
    f_.pages += end - next_;
    f_.sum.postings_scanned += result.stats.postings_scanned;
    f_.sum.candidates += result.stats.candidates;
    f_.sum.positional_passed += result.stats.positional_passed;
    f_.sum.verifications += result.stats.verifications;
    f_.sum.resident_pairs += result.stats.resident_pairs;
    f_.sum.fetched_bytes += result.stats.fetched_bytes;
    f_.batch_pairs += result.stats.batch_pairs;
    next_ = end;
  }
  f_.st = shard_->Stats();
  f_.disk = shard_->DiskBytes();
  f_.final_pages = f_.st.resident_pages;
  return Status::Ok();
}

Status Tier2Bench::BruteForce(size_t begin, size_t end) {
  // Brute force on a sample of this batch, against the resident versions, before Apply.
  const size_t n = std::min<size_t>(a_.brute_pages, end - begin);
  std::vector<const pb::PageSignature*> resident_sigs;
  resident_sigs.reserve(current_.size());
  for (const auto& [u, i] : current_) resident_sigs.push_back(&sigs_[i]);
  std::set<std::pair<size_t, std::string>> brute;
  const auto t0 = Clock::now();
  for (size_t k = 0; k < n; ++k) {
    const pb::PageSignature& x = sigs_[begin + k];
    for (const pb::PageSignature* y : resident_sigs) {
      if (y->url() == x.url()) continue;
      if (JaccardAtLeast(Overlap(Set(x), Set(*y)), x.shingles_size(), y->shingles_size(), r_.threshold)) {
        brute.emplace(k, y->url());
      }
    }
  }
  f_.brute_s = Since(t0);
  f_.brute_done = n;
  std::vector<tier2::ShardPage> sample;
  for (size_t k = 0; k < n; ++k) sample.push_back({&sigs_[begin + k], true});
  tier2::CompareResult r;
  const auto t1 = Clock::now();
  RETURN_IF_ERROR(shard_->CompareBatch(sample, r_.threshold, &r));
  f_.brute_indexed_s = Since(t1);
  std::set<std::pair<size_t, std::string>> indexed;
  for (const auto& m : r.resident) indexed.emplace(m.page, m.url);
  f_.brute_pairs = brute.size();
  for (const auto& p : brute) f_.brute_mismatch += indexed.count(p) == 0;
  for (const auto& p : indexed) f_.brute_mismatch += brute.count(p) == 0;
  return Status::Ok();
}

Status Tier2Bench::Restart() {
  // Restart: rebuild the index from LevelDB, and the RSS that adds.
  shard_.reset();
  std::vector<pb::PageSignature>().swap(sigs_);
  current_.clear();
  malloc_trim(0);
  f_.rss_before = AnonRssBytes();
  ASSIGN_OR_RETURN(std::unique_ptr<tier2::Shard> reopened, tier2::Shard::Open(shard_options_));
  malloc_trim(0);
  f_.rss_after = AnonRssBytes();
  f_.rst = reopened->Stats();
  return Status::Ok();
}

void Tier2Bench::Print() const {
  const Figures& f = f_;
  const tier2::ShardStats& st = f.st;
  const tier2::ShardStats& rst = f.rst;
  const uint64_t pages = f.pages, final_pages = f.final_pages;
  const double per = pages ? 1.0 / pages : 0;
  std::printf("tier2 bench: threshold %.2f, %llu resident pages, batches of %u, prefix overlap c=%u, 1 thread\n",
              r_.threshold, static_cast<unsigned long long>(f.resident), a_.batch, shard_options_.prefix_overlap);
  std::printf("  load: %llu pages in %.1f s (compare %.1f s, apply %.1f s)\n",
              static_cast<unsigned long long>(f.resident), f.load_s, f.load_compare, f.load_apply);
  std::printf("  new pages against the full collection (%llu pages in %d batches):\n",
              static_cast<unsigned long long>(pages), a_.batches);
  std::printf("    CompareBatch          %10.0f pages/s per core\n", pages / f.compare_s);
  std::printf("    Apply (fsync'ed)      %10.0f pages/s\n", pages / f.apply_s);
  std::printf("    compare + apply       %10.0f pages/s\n", pages / (f.compare_s + f.apply_s));
  std::printf("    per page: %.1f postings scanned, %.2f candidates, %.2f after the positional bound, %.2f verifications, %.2f resident pairs, "
              "%.2f in-batch pairs, %.1f KB fetched\n",
              f.sum.postings_scanned * per, f.sum.candidates * per, f.sum.positional_passed * per, f.sum.verifications * per,
              f.sum.resident_pairs * per, f.batch_pairs * per, f.sum.fetched_bytes * per / 1024);
  if (f.brute_done > 0) {
    std::printf("  brute-force many-to-all, %llu pages x %llu resident: %.3f s (%.1f pages/s); index %.4f s: "
                "%.0fx faster; pairs %llu, mismatches %llu\n",
                static_cast<unsigned long long>(f.brute_done), static_cast<unsigned long long>(f.resident), f.brute_s,
                f.brute_done / f.brute_s, f.brute_indexed_s, f.brute_s / f.brute_indexed_s,
                static_cast<unsigned long long>(f.brute_pairs), static_cast<unsigned long long>(f.brute_mismatch));
  }
  std::printf("  RAM per resident page: %.0f B (index %.0f B: %.1f postings/page, %.1f per bucket; page table %.0f B); "
              "anonymous RSS added by a restarted shard: %.0f B/page\n",
              st.ram_bytes_per_page(), static_cast<double>(st.index_bytes) / final_pages,
              static_cast<double>(st.index_postings) / final_pages,
              static_cast<double>(st.index_postings) / static_cast<double>(std::max<uint64_t>(st.index_buckets, 1)),
              static_cast<double>(st.page_table_bytes) / final_pages,
              static_cast<double>(f.rss_after - std::min(f.rss_after, f.rss_before)) / final_pages);
  std::printf("  on disk: %.0f B/page (%.2f GB; signature log %.0f B/page, of which live %.0f B/page; LevelDB the rest)\n",
              static_cast<double>(f.disk) / final_pages, f.disk / 1e9, static_cast<double>(st.log_bytes) / final_pages,
              static_cast<double>(st.log_live_bytes) / final_pages);
  std::printf("  restart (index rebuilt from the signature log): %.2f s for %llu pages; after restart %.0f B/page\n",
              rst.open_seconds, static_cast<unsigned long long>(rst.resident_pages), rst.ram_bytes_per_page());
  if (!f.growth.empty()) {
    std::printf("  incremental vs from scratch (next 1%%):\n    %10s %10s %14s %14s %8s\n", "resident", "next",
                "incremental_s", "scratch_s", "ratio");
    for (const auto& g : f.growth) {
      std::printf("    %10llu %10llu %14.4f %14.4f %8.1f\n", static_cast<unsigned long long>(g.resident),
                  static_cast<unsigned long long>(g.next_pages), g.incremental_s, g.recompute_s,
                  g.recompute_s / g.incremental_s);
    }
  }
}

Status Tier2Bench::WriteCsv() const {
  if (a_.csv.empty()) return Status::Ok();
  std::ofstream csv(a_.csv);
  csv << "resident,next_pages,incremental_seconds,recompute_seconds,ratio\n";
  for (const auto& g : f_.growth) {
    csv << g.resident << ',' << g.next_pages << ',' << g.incremental_s << ',' << g.recompute_s << ','
        << g.recompute_s / g.incremental_s << '\n';
  }
  if (!csv) return IoError("cannot write " + a_.csv);
  return Status::Ok();
}

void Tier2Bench::WriteReport() const {
  if (a_.report.empty()) return;
  const Figures& f = f_;
  const double per = f.pages ? 1.0 / f.pages : 0;
  std::string j = "{";
  AppendJsonField(&j, "threshold", r_.threshold);
  AppendJsonField(&j, "resident_pages", static_cast<double>(f.resident));
  AppendJsonField(&j, "batch", static_cast<double>(a_.batch));
  AppendJsonField(&j, "prefix_overlap", static_cast<double>(shard_options_.prefix_overlap));
  AppendJsonField(&j, "compare_pages_per_second", f.pages / f.compare_s);
  AppendJsonField(&j, "apply_pages_per_second", f.pages / f.apply_s);
  AppendJsonField(&j, "candidates_per_page", f.sum.candidates * per);
  AppendJsonField(&j, "verifications_per_page", f.sum.verifications * per);
  AppendJsonField(&j, "ram_bytes_per_page", f.st.ram_bytes_per_page());
  AppendJsonField(&j, "rss_bytes_per_page_after_restart",
                  static_cast<double>(f.rss_after - std::min(f.rss_after, f.rss_before)) / f.final_pages);
  AppendJsonField(&j, "disk_bytes_per_page", static_cast<double>(f.disk) / f.final_pages);
  AppendJsonField(&j, "restart_seconds", f.rst.open_seconds);
  AppendJsonField(&j, "brute_force_speedup", f.brute_indexed_s > 0 ? f.brute_s / f.brute_indexed_s : 0);
  AppendJsonField(&j, "brute_force_mismatches", static_cast<double>(f.brute_mismatch));
  j += "}\n";
  std::ofstream(a_.report) << j;
}

}  // namespace

int RunTier2Bench(const Tier2BenchOptions& options) { return Tier2Bench(options).Run(); }

}  // namespace neardup::bench
