// neardup bench tier2: one Tier 2 shard against a large resident collection.
//
//   neardup bench tier2 [--input crawl.jsonl | --gen-seed S] --resident 1000000 --batch 1000
//                       --threshold 0.9 [--batches 10] [--brute-pages 20] [--growth --csv fig7.csv]
//
// 1. Signs the crawl's content pages (generating a crawl under --workdir when no --input is given).
// 2. Loads them through the shard incrementally, batch by batch (CompareBatch, then Apply), until
//    --resident pages are resident. With --growth, at each milestone 10k, 20k, 50k, ... the next 1%
//    of pages is timed through the shard (incremental), and the whole collection plus that 1% is
//    recomputed from scratch with the baseline's exact all-pairs join on one thread
//    (non-incremental): the paper's Fig. 7.
// 3. Times --batches further batches of new pages, single-threaded: pages/s for CompareBatch and
//    for Apply (fsync'ed), candidates, verifications and pairs per page.
// 4. Compares --brute-pages pages of the first timed batch with every resident page by brute force
//    (in memory, no index, no I/O), as a speed ratio, and checks that both find the same pairs.
// 5. Reports RAM bytes per resident page (index structures, and the process RSS a restarted shard
//    adds), LevelDB bytes on disk per page, and the restart time.
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
#include "cli/commands.h"
#include "cli/common_options.h"
#include "common/json_write.h"
#include "common/progress.h"
#include "document/crawl_signer.h"
#include "document/shingle.h"
#include "gencrawl/crawl_generator.h"
#include "tier2/shard.h"

namespace neardup::cli {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Tier2Args {
  SharedOptions shared;
  std::string input;
  std::string workdir = "/tmp/neardup-bench-tier2";
  uint64_t gen_seed = 42;
  uint64_t resident = 1000000;
  uint32_t batch = 1000;
  int batches = 10;
  int brute_pages = 20;
  uint32_t prefix_overlap = 0;  // 0 = the configuration's tier2.prefix_overlap
  bool growth = false;
  std::string csv;
  std::string report;
};

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
  Tier2Bench(const Tier2Args& a, const ResolvedOptions& r) : a_(a), r_(r) {}
  int Run();

 private:
  Status LoadSignatures(uint64_t needed);
  // CompareBatch + Apply of sigs_[begin, end); adds the times.
  Status Process(size_t begin, size_t end, double* compare_s, double* apply_s, tier2::CompareResult* result);
  Status Recompute(size_t end, double* seconds);

  const Tier2Args& a_;
  const ResolvedOptions& r_;
  std::vector<pb::PageSignature> sigs_;
  std::unordered_map<std::string, uint32_t> current_;  // url -> index in sigs_ of the resident version
  std::unique_ptr<tier2::Shard> shard_;
  tier2::ShardOptions shard_options_;
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
  if (Status s = LoadSignatures(needed); !s.ok()) {
    spdlog::error("bench tier2: {}", s.ToString());
    return 1;
  }
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
  auto opened = tier2::Shard::Open(shard_options_);
  if (!opened.ok()) { spdlog::error("bench tier2: {}", opened.status().ToString()); return 1; }
  shard_ = std::move(*opened);

  // Load, batch by batch, with the growth milestones.
  std::vector<uint64_t> milestones;
  if (a_.growth) {
    for (uint64_t m = 10000; m < a_.resident; m = m * 10) {
      for (uint64_t f : {1, 2, 5}) if (m * f < a_.resident) milestones.push_back(m * f);
    }
    milestones.push_back(a_.resident);
  }
  std::vector<Growth> growth;
  size_t next = 0, mi = 0;
  double load_compare = 0, load_apply = 0;
  tier2::CompareResult result;
  Progress progress("bench tier2: load", a_.resident);
  auto fail = [](const Status& s) { spdlog::error("bench tier2: {}", s.ToString()); return 1; };
  while (next < sigs_.size()) {
    const uint64_t resident = shard_->Stats().resident_pages;
    if (mi < milestones.size() && resident >= milestones[mi]) {
      const size_t chunk = std::max<size_t>(1, resident / 100);
      if (next + chunk > sigs_.size()) break;
      double inc = 0, cmp = 0, app = 0;
      for (size_t b = next; b < next + chunk; b += a_.batch) {
        if (Status s = Process(b, std::min(next + chunk, b + a_.batch), &cmp, &app, &result); !s.ok()) return fail(s);
      }
      inc = cmp + app;
      double re = 0;
      if (Status s = Recompute(next + chunk, &re); !s.ok()) return fail(s);
      growth.push_back({resident, chunk, inc, re});
      spdlog::info("bench tier2: growth at {} resident: next {} pages incrementally {:.3f} s, from scratch {:.3f} s "
                   "(ratio {:.1f})", resident, chunk, inc, re, re / inc);
      next += chunk;
      ++mi;
      continue;
    }
    if (resident >= a_.resident) break;
    const size_t end = std::min(sigs_.size(), next + a_.batch);
    if (Status s = Process(next, end, &load_compare, &load_apply, &result); !s.ok()) return fail(s);
    next = end;
    progress.Update(shard_->Stats().resident_pages, shard_->Stats().resident_pages);
  }
  const double load_s = progress.Finish(shard_->Stats().resident_pages);
  const uint64_t resident = shard_->Stats().resident_pages;
  if (resident < a_.resident) {
    spdlog::warn("bench tier2: the input holds only {} distinct pages; measuring at that size", resident);
  }

  // Timed batches.
  double compare_s = 0, apply_s = 0;
  tier2::CompareStats sum;
  uint64_t pages = 0, batch_pairs = 0;
  double brute_s = 0, brute_indexed_s = 0;
  uint64_t brute_pairs = 0, brute_mismatch = 0, brute_done = 0;
  for (int b = 0; b < a_.batches && next < sigs_.size(); ++b) {
    const size_t end = std::min(sigs_.size(), next + a_.batch);
    if (b == 0 && a_.brute_pages > 0) {
      // Brute force on a sample of this batch, against the resident versions, before Apply.
      const size_t n = std::min<size_t>(a_.brute_pages, end - next);
      std::vector<const pb::PageSignature*> resident_sigs;
      resident_sigs.reserve(current_.size());
      for (const auto& [u, i] : current_) resident_sigs.push_back(&sigs_[i]);
      std::set<std::pair<size_t, std::string>> brute;
      const auto t0 = Clock::now();
      for (size_t k = 0; k < n; ++k) {
        const pb::PageSignature& x = sigs_[next + k];
        for (const pb::PageSignature* y : resident_sigs) {
          if (y->url() == x.url()) continue;
          if (JaccardAtLeast(Overlap(Set(x), Set(*y)), x.shingles_size(), y->shingles_size(), r_.threshold)) {
            brute.emplace(k, y->url());
          }
        }
      }
      brute_s = Since(t0);
      brute_done = n;
      std::vector<tier2::ShardPage> sample;
      for (size_t k = 0; k < n; ++k) sample.push_back({&sigs_[next + k], true});
      tier2::CompareResult r;
      const auto t1 = Clock::now();
      if (Status s = shard_->CompareBatch(sample, r_.threshold, &r); !s.ok()) return fail(s);
      brute_indexed_s = Since(t1);
      std::set<std::pair<size_t, std::string>> indexed;
      for (const auto& m : r.resident) indexed.emplace(m.page, m.url);
      brute_pairs = brute.size();
      for (const auto& p : brute) brute_mismatch += indexed.count(p) == 0;
      for (const auto& p : indexed) brute_mismatch += brute.count(p) == 0;
    }
    if (Status s = Process(next, end, &compare_s, &apply_s, &result); !s.ok()) return fail(s);
    pages += end - next;
    sum.postings_scanned += result.stats.postings_scanned;
    sum.candidates += result.stats.candidates;
    sum.positional_passed += result.stats.positional_passed;
    sum.verifications += result.stats.verifications;
    sum.resident_pairs += result.stats.resident_pairs;
    sum.fetched_bytes += result.stats.fetched_bytes;
    batch_pairs += result.stats.batch_pairs;
    next = end;
  }
  const tier2::ShardStats st = shard_->Stats();
  const uint64_t disk = shard_->DiskBytes();
  const uint64_t final_pages = st.resident_pages;
  const double per = pages ? 1.0 / pages : 0;

  // Restart: rebuild the index from LevelDB, and the RSS that adds.
  shard_.reset();
  std::vector<pb::PageSignature>().swap(sigs_);
  current_.clear();
  malloc_trim(0);
  const uint64_t rss_before = AnonRssBytes();
  auto reopened = tier2::Shard::Open(shard_options_);
  if (!reopened.ok()) return fail(reopened.status());
  malloc_trim(0);
  const uint64_t rss_after = AnonRssBytes();
  const tier2::ShardStats rst = (*reopened)->Stats();

  std::printf("tier2 bench: threshold %.2f, %llu resident pages, batches of %u, prefix overlap c=%u, 1 thread\n",
              r_.threshold, static_cast<unsigned long long>(resident), a_.batch, shard_options_.prefix_overlap);
  std::printf("  load: %llu pages in %.1f s (compare %.1f s, apply %.1f s)\n",
              static_cast<unsigned long long>(resident), load_s, load_compare, load_apply);
  std::printf("  new pages against the full collection (%llu pages in %d batches):\n",
              static_cast<unsigned long long>(pages), a_.batches);
  std::printf("    CompareBatch          %10.0f pages/s per core\n", pages / compare_s);
  std::printf("    Apply (fsync'ed)      %10.0f pages/s\n", pages / apply_s);
  std::printf("    compare + apply       %10.0f pages/s\n", pages / (compare_s + apply_s));
  std::printf("    per page: %.1f postings scanned, %.2f candidates, %.2f after the positional bound, %.2f verifications, %.2f resident pairs, "
              "%.2f in-batch pairs, %.1f KB fetched\n",
              sum.postings_scanned * per, sum.candidates * per, sum.positional_passed * per, sum.verifications * per, sum.resident_pairs * per,
              batch_pairs * per, sum.fetched_bytes * per / 1024);
  if (brute_done > 0) {
    std::printf("  brute-force many-to-all, %llu pages x %llu resident: %.3f s (%.1f pages/s); index %.4f s: "
                "%.0fx faster; pairs %llu, mismatches %llu\n",
                static_cast<unsigned long long>(brute_done), static_cast<unsigned long long>(resident), brute_s,
                brute_done / brute_s, brute_indexed_s, brute_s / brute_indexed_s,
                static_cast<unsigned long long>(brute_pairs), static_cast<unsigned long long>(brute_mismatch));
  }
  std::printf("  RAM per resident page: %.0f B (index %.0f B: %.1f postings/page, %.1f per bucket; page table %.0f B); "
              "anonymous RSS added by a restarted shard: %.0f B/page\n",
              st.ram_bytes_per_page(), static_cast<double>(st.index_bytes) / final_pages,
              static_cast<double>(st.index_postings) / final_pages,
              static_cast<double>(st.index_postings) / static_cast<double>(std::max<uint64_t>(st.index_buckets, 1)),
              static_cast<double>(st.page_table_bytes) / final_pages,
              static_cast<double>(rss_after - std::min(rss_after, rss_before)) / final_pages);
  std::printf("  on disk: %.0f B/page (%.2f GB; signature log %.0f B/page, of which live %.0f B/page; LevelDB the rest)\n",
              static_cast<double>(disk) / final_pages, disk / 1e9, static_cast<double>(st.log_bytes) / final_pages,
              static_cast<double>(st.log_live_bytes) / final_pages);
  std::printf("  restart (index rebuilt from the signature log): %.2f s for %llu pages; after restart %.0f B/page\n",
              rst.open_seconds, static_cast<unsigned long long>(rst.resident_pages), rst.ram_bytes_per_page());
  if (!growth.empty()) {
    std::printf("  incremental vs from scratch (next 1%%):\n    %10s %10s %14s %14s %8s\n", "resident", "next",
                "incremental_s", "scratch_s", "ratio");
    for (const auto& g : growth) {
      std::printf("    %10llu %10llu %14.4f %14.4f %8.1f\n", static_cast<unsigned long long>(g.resident),
                  static_cast<unsigned long long>(g.next_pages), g.incremental_s, g.recompute_s,
                  g.recompute_s / g.incremental_s);
    }
  }
  if (!a_.csv.empty()) {
    std::ofstream csv(a_.csv);
    csv << "resident,next_pages,incremental_seconds,recompute_seconds,ratio\n";
    for (const auto& g : growth) {
      csv << g.resident << ',' << g.next_pages << ',' << g.incremental_s << ',' << g.recompute_s << ','
          << g.recompute_s / g.incremental_s << '\n';
    }
    if (!csv) { spdlog::error("bench tier2: cannot write {}", a_.csv); return 1; }
  }
  if (!a_.report.empty()) {
    std::string j = "{";
    AppendJsonField(&j, "threshold", r_.threshold);
    AppendJsonField(&j, "resident_pages", static_cast<double>(resident));
    AppendJsonField(&j, "batch", static_cast<double>(a_.batch));
    AppendJsonField(&j, "prefix_overlap", static_cast<double>(shard_options_.prefix_overlap));
    AppendJsonField(&j, "compare_pages_per_second", pages / compare_s);
    AppendJsonField(&j, "apply_pages_per_second", pages / apply_s);
    AppendJsonField(&j, "candidates_per_page", sum.candidates * per);
    AppendJsonField(&j, "verifications_per_page", sum.verifications * per);
    AppendJsonField(&j, "ram_bytes_per_page", st.ram_bytes_per_page());
    AppendJsonField(&j, "rss_bytes_per_page_after_restart",
                    static_cast<double>(rss_after - std::min(rss_after, rss_before)) / final_pages);
    AppendJsonField(&j, "disk_bytes_per_page", static_cast<double>(disk) / final_pages);
    AppendJsonField(&j, "restart_seconds", rst.open_seconds);
    AppendJsonField(&j, "brute_force_speedup", brute_indexed_s > 0 ? brute_s / brute_indexed_s : 0);
    AppendJsonField(&j, "brute_force_mismatches", static_cast<double>(brute_mismatch));
    j += "}\n";
    std::ofstream(a_.report) << j;
  }
  return brute_mismatch == 0 ? 0 : 1;
}

}  // namespace

void AddBenchTier2(CLI::App* bench, int* exit_code) {
  auto* cmd = bench->add_subcommand("tier2", "One Tier 2 shard: new pages/s against a resident collection");
  auto a = std::make_shared<Tier2Args>();
  AddSharedOptions(cmd, &a->shared);
  cmd->add_option("--input", a->input, "crawl JSON Lines (default: generate one under --workdir)");
  cmd->add_option("--workdir", a->workdir, "where the generated crawl and the shard's LevelDB go")->capture_default_str();
  cmd->add_option("--gen-seed", a->gen_seed, "seed of the generated crawl")->capture_default_str();
  cmd->add_option("--resident", a->resident, "resident pages before timing")->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--batch", a->batch, "pages per batch")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--batches", a->batches, "timed batches")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--brute-pages", a->brute_pages, "pages of the first timed batch also compared by brute force")
      ->capture_default_str();
  cmd->add_option("--prefix-overlap", a->prefix_overlap, "c of the l-prefix filter (default: the config's)")
      ->check(CLI::Range(1, 64));
  cmd->add_flag("--growth", a->growth, "time the next 1% incrementally vs from scratch at 10k, 20k, 50k, ...");
  cmd->add_option("--csv", a->csv, "write the growth rows as CSV");
  cmd->add_option("--report", a->report, "write the figures as JSON");
  cmd->callback([a, exit_code] {
    auto r = ResolveShared(a->shared);
    if (!r.ok()) { spdlog::error("{}", r.status().message()); *exit_code = 2; return; }
    Tier2Bench workload(*a, *r);
    *exit_code = workload.Run();
  });
}

}  // namespace neardup::cli
