#include "experiments/partition_experiments.h"

#include <spdlog/spdlog.h>
#include <xxhash.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <unordered_map>

#include "baseline/all_pairs.h"
#include "partitioner/map_builder.h"

namespace neardup::experiments {

using partitioner::BuildPartitionMap;
using partitioner::EvaluateMap;
using partitioner::Imbalance;
using partitioner::LengthSample;
using partitioner::MapBuildOptions;
using partitioner::MapEvaluation;
using partitioner::PartitionMap;

namespace {

constexpr int kSignDims = 6;  // folds exactly onto 1, 2 and 3 dimensions

struct Corpus {
  std::vector<std::array<uint32_t, kSignDims>> words, shingles;
  std::vector<uint64_t> url_hash;           // XXH3 of the URL (the stability experiment's buckets)
  std::vector<std::vector<uint64_t>> sets;  // only when asked for
  size_t size() const { return url_hash.size(); }
};

constexpr char kCacheMagic[8] = {'N', 'D', 'V', 'E', 'C', '0', '0', '1'};

// The cache file of a crawl's vectors: named by the crawl's absolute path, size and mtime.
std::string CachePath(const std::string& dir, const std::string& input) {
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(input, ec);
  const auto size = std::filesystem::file_size(input, ec);
  const auto mtime = std::filesystem::last_write_time(input, ec).time_since_epoch().count();
  const std::string key = abs.string() + "|" + std::to_string(size) + "|" + std::to_string(mtime);
  char name[64];
  std::snprintf(name, sizeof(name), "vectors-%016llx.bin",
                static_cast<unsigned long long>(XXH3_64bits(key.data(), key.size())));
  return (std::filesystem::path(dir) / name).string();
}

bool ReadCache(const std::string& path, Corpus* c) {
  std::ifstream in(path, std::ios::binary);
  char magic[8];
  uint64_t n = 0;
  if (!in.read(magic, 8) || std::memcmp(magic, kCacheMagic, 8) != 0 || !in.read(reinterpret_cast<char*>(&n), 8)) {
    return false;
  }
  c->words.resize(n);
  c->shingles.resize(n);
  c->url_hash.resize(n);
  in.read(reinterpret_cast<char*>(c->words.data()), static_cast<std::streamsize>(n * sizeof(c->words[0])));
  in.read(reinterpret_cast<char*>(c->shingles.data()), static_cast<std::streamsize>(n * sizeof(c->shingles[0])));
  in.read(reinterpret_cast<char*>(c->url_hash.data()), static_cast<std::streamsize>(n * sizeof(uint64_t)));
  return static_cast<bool>(in);
}

Status WriteCache(const std::string& path, const Corpus& c) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    const uint64_t n = c.size();
    out.write(kCacheMagic, 8);
    out.write(reinterpret_cast<const char*>(&n), 8);
    out.write(reinterpret_cast<const char*>(c.words.data()), static_cast<std::streamsize>(n * sizeof(c.words[0])));
    out.write(reinterpret_cast<const char*>(c.shingles.data()), static_cast<std::streamsize>(n * sizeof(c.shingles[0])));
    out.write(reinterpret_cast<const char*>(c.url_hash.data()), static_cast<std::streamsize>(n * sizeof(uint64_t)));
    if (!out) return IoError("cannot write " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return IoError("cannot rename " + tmp + ": " + ec.message());
  return Status::Ok();
}

// Resident pages (last record per URL, redirects dropped) in first-seen order.
StatusOr<Corpus> LoadCorpus(const PartitionExperimentOptions& o, const std::string& input, bool keep_sets) {
  const bool cached = !keep_sets && !o.cache_dir.empty();
  std::string cache;
  if (cached) {
    cache = CachePath(o.cache_dir, input);
    Corpus c;
    if (ReadCache(cache, &c)) {
      spdlog::info("experiment: {} resident pages of {} (vectors from {})", c.size(), input, cache);
      return c;
    }
  }
  struct Page {
    std::array<uint32_t, kSignDims> w{}, s{};
    std::vector<uint64_t> set;
    bool alive = false;
  };
  std::unordered_map<std::string, size_t> index;
  std::vector<uint64_t> hashes;
  std::vector<Page> pages;
  CrawlSignerOptions so;
  so.signer = {.k = 5, .dims = kSignDims};
  so.threads = o.threads;
  so.progress_label = "experiment: sign";
  RETURN_IF_ERROR(SignCrawl(input, so, [&](CrawlRecord& rec, PageFeatures& f) {
    auto [it, inserted] = index.try_emplace(rec.url, pages.size());
    if (inserted) {
      pages.emplace_back();
      hashes.push_back(XXH3_64bits_withSeed(rec.url.data(), rec.url.size(), 0x53544142));
    }
    Page& p = pages[it->second];
    p.alive = rec.has_content() && !f.shingles.empty();
    std::copy(f.length_vector.begin(), f.length_vector.end(), p.w.begin());
    std::copy(f.shingle_vector.begin(), f.shingle_vector.end(), p.s.begin());
    if (keep_sets) p.set = std::move(f.shingles);
    return Status::Ok();
  }));
  Corpus c;
  for (size_t i = 0; i < pages.size(); ++i) {
    if (!pages[i].alive) continue;
    c.words.push_back(pages[i].w);
    c.shingles.push_back(pages[i].s);
    c.url_hash.push_back(hashes[i]);
    if (keep_sets) c.sets.push_back(std::move(pages[i].set));
  }
  spdlog::info("experiment: {} resident pages of {}", c.size(), input);
  if (cached) {
    std::error_code ec;
    std::filesystem::create_directories(o.cache_dir, ec);
    if (Status s = WriteCache(cache, c); !s.ok()) spdlog::warn("experiment: {}", s.message());
  }
  return c;
}

// The corpus (or the pages in `subset`) folded onto `dims` dimensions.
LengthSample Fold(const Corpus& c, uint32_t dims, const std::vector<uint32_t>* subset = nullptr) {
  LengthSample s(dims);
  std::vector<uint32_t> w(dims), sh(dims);
  auto add = [&](size_t i) {
    std::fill(w.begin(), w.end(), 0);
    std::fill(sh.begin(), sh.end(), 0);
    for (int d = 0; d < kSignDims; ++d) {
      w[static_cast<uint32_t>(d) % dims] += c.words[i][d];
      sh[static_cast<uint32_t>(d) % dims] += c.shingles[i][d];
    }
    s.Add(w, sh);
  };
  if (subset != nullptr) {
    for (uint32_t i : *subset) add(i);
  } else {
    for (size_t i = 0; i < c.size(); ++i) add(i);
  }
  return s;
}

// Every length of every page multiplied by `factor` (rounded): the same pages, grown or shrunk.
LengthSample Scaled(const LengthSample& s, double factor) {
  LengthSample out(s.dims());
  std::vector<uint32_t> w(s.dims()), sh(s.dims());
  for (size_t i = 0; i < s.size(); ++i) {
    for (uint32_t d = 0; d < s.dims(); ++d) {
      w[d] = static_cast<uint32_t>(std::lround(s.Vector(i, pb::PartitionMap::WORD_LENGTHS)[d] * factor));
      sh[d] = static_cast<uint32_t>(std::lround(s.Vector(i, pb::PartitionMap::SHINGLE_COUNTS)[d] * factor));
    }
    out.Add(w, sh);
  }
  return out;
}

// At most `max` pages, evenly spaced.
std::vector<uint32_t> Spread(size_t n, size_t max) {
  std::vector<uint32_t> idx;
  const size_t step = std::max<size_t>(1, (n + max - 1) / max);
  for (size_t i = 0; i < n; i += step) idx.push_back(static_cast<uint32_t>(i));
  return idx;
}

Status OpenCsv(const std::string& path, std::ofstream* out, const std::string& header) {
  out->open(path, std::ios::trunc);
  if (!*out) return IoError("cannot write " + path);
  out->precision(9);  // enough to tell 1.000001 from 1.00001
  *out << header << "\n";
  return Status::Ok();
}

Status CheckAssignment(const std::string& a) {
  if (a == "largest-first" || a == "spread" || a == "contiguous") return Status::Ok();
  return InvalidArgument("assignment must be largest-first, spread or contiguous, got " + a);
}

MapBuildOptions Build(uint32_t dims, uint32_t shards, double t, pb::PartitionMap::Routing routing, double rho,
                      const PartitionExperimentOptions& o) {
  return MapBuildOptions{.dims = dims, .shards = shards, .threshold = t, .routing = routing, .rho = rho,
                         .cells_per_shard = o.cells_per_shard, .shingle_k = 5, .fine_grain = o.fine_grain,
                         .contiguous_shards = o.assignment == "contiguous",
                         .spread_shards = o.assignment == "spread"};
}

}  // namespace

Status RunImbalanceFigure(const PartitionExperimentOptions& o) {
  RETURN_IF_ERROR(CheckAssignment(o.assignment));
  ASSIGN_OR_RETURN(Corpus c, LoadCorpus(o, o.input, false));
  std::ofstream csv;
  // lower_bound: the imbalance of a perfect split of the pages, ceil(pages / shards) / mean.
  RETURN_IF_ERROR(OpenCsv(o.csv, &csv, "shards,dims,imbalance,cells,pages,fine_grain,lower_bound,assignment"));
  for (double fine : {o.fine_grain, o.threshold}) {
  PartitionExperimentOptions variant = o;
  variant.fine_grain = fine;
  for (uint32_t dims : {1u, 2u, 3u}) {
    const LengthSample s = Fold(c, dims);
    for (uint32_t m : o.shards) {
      ASSIGN_OR_RETURN(PartitionMap map, BuildPartitionMap(s, Build(dims, m, o.threshold, pb::PartitionMap::RHO_BOX, 1.0,
                                                                    variant)));
      std::vector<double> load(m, 0.0);
      for (size_t i = 0; i < s.size(); ++i) load[map.ShardOf(map.Home(s.Vector(i, map.proto().feature())))] += 1;
      const double imb = Imbalance(load);
      const double bound = std::ceil(static_cast<double>(s.size()) / m) * m / static_cast<double>(s.size());
      csv << m << "," << dims << "," << imb << "," << map.cells() << "," << s.size() << "," << fine << "," << bound
          << "," << o.assignment << "\n";
      spdlog::info("fig4: {}D, {} shards, fine-grain {}: imbalance {:.3f} ({} cells)", dims, m, fine, imb, map.cells());
    }
  }
  }
  return Status::Ok();
}

Status RunCommunicationFigure(const PartitionExperimentOptions& o) {
  RETURN_IF_ERROR(CheckAssignment(o.assignment));
  ASSIGN_OR_RETURN(Corpus c, LoadCorpus(o, o.input, false));
  const LengthSample s = Fold(c, 3);
  const std::vector<uint32_t> eval_idx = Spread(c.size(), o.max_eval_pages);
  const LengthSample eval = Fold(c, 3, &eval_idx);
  std::ofstream csv;
  RETURN_IF_ERROR(OpenCsv(o.csv, &csv, "shards,threshold,routing,rho,communication_reduction,shards_contacted,cells_contacted"));
  for (auto routing : {pb::PartitionMap::RHO_BOX, pb::PartitionMap::EXACT_L1}) {
    for (double t : o.thresholds) {
      for (uint32_t m : o.shards) {
        ASSIGN_OR_RETURN(PartitionMap map, BuildPartitionMap(s, Build(3, m, t, routing, 1.0, o)));
        const MapEvaluation e = EvaluateMap(map, eval);
        const char* name = routing == pb::PartitionMap::EXACT_L1 ? "exact" : "rho";
        csv << m << "," << t << "," << name << "," << map.proto().rho() << "," << e.communication_reduction << ","
            << e.mean_shards_contacted << "," << e.mean_cells_contacted << "\n";
        spdlog::info("fig5: {} t={} {} shards: {:.1f}% avoided", name, t, m, 100 * e.communication_reduction);
      }
    }
  }
  return Status::Ok();
}

Status RunStabilityExperiment(const PartitionExperimentOptions& o) {
  for (const std::string& a : o.assignments) RETURN_IF_ERROR(CheckAssignment(a));
  for (const std::string& k : o.kinds) {
    if (k != "same_distribution" && k != "drifted_lengths" && k != "crawl_epochs") {
      return InvalidArgument("unknown stability kind " + k);
    }
  }
  auto wanted = [&](std::string_view kind) { return std::find(o.kinds.begin(), o.kinds.end(), kind) != o.kinds.end(); };
  ASSIGN_OR_RETURN(Corpus c, LoadCorpus(o, o.input, false));
  constexpr int kSamples = 11;
  std::vector<std::vector<uint32_t>> bucket(kSamples);
  for (uint32_t i = 0; i < c.size(); ++i) bucket[c.url_hash[i] % kSamples].push_back(i);
  std::vector<Corpus> epochs;
  if (wanted("crawl_epochs")) {
    for (const std::string& path : o.epoch_inputs) {
      ASSIGN_OR_RETURN(Corpus e, LoadCorpus(o, path, false));
      epochs.push_back(std::move(e));
    }
  }
  std::ofstream csv;
  RETURN_IF_ERROR(OpenCsv(o.csv, &csv,
                          "samples_kind,shards,dims,train_imbalance,mean_imbalance,stddev,cv,samples,pages_per_sample,"
                          "assignment,cells,communication_reduction,train_pages,min_imbalance,max_imbalance,imbalances"));
  // Three kinds of "other samples":
  //  - same_distribution: the map is trained on one eleventh of the URLs and judged on the ten
  //    other elevenths as they are (they differ only by sampling noise);
  //  - drifted_lengths: the same ten with sample k's lengths scaled by 0.91, 0.93, ..., 1.09
  //    (every page grew or shrank by up to 9%);
  //  - crawl_epochs: trained on all of `input`, judged on each crawl of epoch_inputs whole (other
  //    crawls whose length mixture drifted, gen-crawl --epoch/--length-drift).
  std::vector<std::string> kinds;
  for (const char* k : {"same_distribution", "drifted_lengths", "crawl_epochs"}) {
    if (wanted(k) && (std::string_view(k) != "crawl_epochs" || !epochs.empty())) kinds.push_back(k);
  }
  for (const std::string& kind : kinds) {
    for (uint32_t dims : {1u, 2u, 3u}) {
      LengthSample train(dims);
      std::vector<LengthSample> tests;
      if (kind == "crawl_epochs") {
        train = Fold(c, dims);
        for (const Corpus& e : epochs) tests.push_back(Fold(e, dims));
      } else {
        train = Fold(c, dims, &bucket[0]);
        for (int k = 1; k < kSamples; ++k) {
          LengthSample t = Fold(c, dims, &bucket[k]);
          if (kind == "drifted_lengths") t = Scaled(t, 0.91 + 0.02 * (k - 1));
          tests.push_back(std::move(t));
        }
      }
      for (const std::string& assignment : o.assignments) {
        PartitionExperimentOptions variant = o;
        variant.assignment = assignment;
        for (uint32_t m : o.shards) {
          ASSIGN_OR_RETURN(PartitionMap map, BuildPartitionMap(train, Build(dims, m, o.threshold,
                                                                            pb::PartitionMap::RHO_BOX, 1.0, variant)));
          std::vector<double> imb;
          for (const auto& t : tests) imb.push_back(EvaluateMap(map, t).imbalance);
          const double mean = std::accumulate(imb.begin(), imb.end(), 0.0) / imb.size();
          double var = 0;
          for (double x : imb) var += (x - mean) * (x - mean);
          const double sd = std::sqrt(var / imb.size());
          const MapEvaluation te = EvaluateMap(map, train);
          size_t test_pages = 0;
          for (const auto& t : tests) test_pages += t.size();
          csv << kind << "," << m << "," << dims << "," << te.imbalance << "," << mean << "," << sd << "," << sd / mean
              << "," << tests.size() << "," << test_pages / tests.size() << "," << assignment << "," << map.cells()
              << "," << te.communication_reduction << "," << train.size() << ","
              << *std::min_element(imb.begin(), imb.end()) << "," << *std::max_element(imb.begin(), imb.end()) << ",";
          for (size_t k = 0; k < imb.size(); ++k) csv << (k ? ";" : "") << imb[k];
          csv << "\n";
          spdlog::info("stability ({}, {}): {}D, {} shards, {} cells: imbalance {:.3f} +- {:.4f} (CV {:.2f}%), "
                       "{:.1f}% communication avoided",
                       kind, assignment, dims, m, map.cells(), mean, sd, 100 * sd / mean,
                       100 * te.communication_reduction);
        }
      }
    }
  }
  return Status::Ok();
}

Status RunRoutingRecall(const PartitionExperimentOptions& o) {
  RETURN_IF_ERROR(CheckAssignment(o.assignment));
  ASSIGN_OR_RETURN(Corpus c, LoadCorpus(o, o.input, true));
  const LengthSample s = Fold(c, 3);
  std::vector<std::vector<uint64_t>> sets = std::move(c.sets);
  baseline::AllPairsStats st;
  const std::vector<baseline::SimilarPair> pairs =
      baseline::ExactAllPairs(std::move(sets), {.threshold = o.threshold, .threads = o.threads}, &st);
  spdlog::info("recall: {} baseline pairs at t={}", pairs.size(), o.threshold);
  std::ofstream csv;
  RETURN_IF_ERROR(OpenCsv(o.csv, &csv, "routing,rho,shards,threshold,pairs,lost,lost_share,shards_contacted"));
  struct Mode { pb::PartitionMap::Routing routing; double rho; };
  std::vector<Mode> modes;
  for (double r : o.rhos) modes.push_back({pb::PartitionMap::RHO_BOX, r});
  modes.push_back({pb::PartitionMap::EXACT_L1, 1.0});
  const uint32_t shards = o.shards.empty() ? 64 : o.shards.back();
  std::vector<uint32_t> cells;
  for (const Mode& mode : modes) {
    ASSIGN_OR_RETURN(PartitionMap map, BuildPartitionMap(s, Build(3, shards, o.threshold, mode.routing, mode.rho,
                                                                  o)));
    const auto feature = map.proto().feature();
    uint64_t lost = 0;
    for (const baseline::SimilarPair& p : pairs) {
      // p.b was seen later: it is the page being routed, p.a is resident.
      map.RouteCells(s.Vector(p.b, feature), &cells);
      if (!std::binary_search(cells.begin(), cells.end(), map.Home(s.Vector(p.a, feature)))) ++lost;
    }
    const MapEvaluation e = EvaluateMap(map, s);
    const char* name = mode.routing == pb::PartitionMap::EXACT_L1 ? "exact" : "rho";
    const double share = pairs.empty() ? 0 : static_cast<double>(lost) / pairs.size();
    csv << name << "," << mode.rho << "," << shards << "," << o.threshold << "," << pairs.size() << "," << lost << ","
        << share << "," << e.mean_shards_contacted << "\n";
    spdlog::info("recall: {} rho={}: {} of {} pairs lost ({:.3f}%), {:.2f} shards contacted", name, mode.rho, lost,
                 pairs.size(), 100 * share, e.mean_shards_contacted);
  }
  return Status::Ok();
}

}  // namespace neardup::experiments
