#include "experiments/partition_experiments.h"

#include <spdlog/spdlog.h>
#include <xxhash.h>

#include <array>
#include <cmath>
#include <fstream>
#include <numeric>
#include <unordered_map>

#include "baseline/all_pairs.h"
#include "partitioner/map_builder.h"

namespace neardup {
namespace {

constexpr int kSignDims = 6;  // folds exactly onto 1, 2 and 3 dimensions

struct Corpus {
  std::vector<std::array<uint32_t, kSignDims>> words, shingles;
  std::vector<std::string> urls;
  std::vector<std::vector<uint64_t>> sets;  // only when asked for
};

// Resident pages (last record per URL, redirects dropped) in first-seen order.
StatusOr<Corpus> LoadCorpus(const PartitionExperimentOptions& o, bool keep_sets) {
  struct Page {
    std::array<uint32_t, kSignDims> w{}, s{};
    std::vector<uint64_t> set;
    bool alive = false;
  };
  std::unordered_map<std::string, size_t> index;
  std::vector<std::string> urls;
  std::vector<Page> pages;
  CrawlSignerOptions so;
  so.signer = {.k = 5, .dims = kSignDims};
  so.threads = o.threads;
  so.progress_label = "experiment: sign";
  RETURN_IF_ERROR(SignCrawl(o.input, so, [&](CrawlRecord& rec, PageFeatures& f) {
    auto [it, inserted] = index.try_emplace(rec.url, pages.size());
    if (inserted) {
      pages.emplace_back();
      urls.push_back(rec.url);
    }
    Page& p = pages[it->second];
    p.alive = !rec.is_redirect() && !f.shingles.empty();
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
    c.urls.push_back(std::move(urls[i]));
    if (keep_sets) c.sets.push_back(std::move(pages[i].set));
  }
  spdlog::info("experiment: {} resident pages", c.urls.size());
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
    for (size_t i = 0; i < c.urls.size(); ++i) add(i);
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
  *out << header << "\n";
  return Status::Ok();
}

MapBuildOptions Build(uint32_t dims, uint32_t machines, double t, pb::PartitionMap::Routing routing, double rho,
                      const PartitionExperimentOptions& o) {
  return MapBuildOptions{.dims = dims, .machines = machines, .threshold = t, .routing = routing, .rho = rho,
                         .cells_per_machine = o.cells_per_machine, .shingle_k = 5, .fine_grain = o.fine_grain};
}

}  // namespace

Status RunImbalanceFigure(const PartitionExperimentOptions& o) {
  ASSIGN_OR_RETURN(Corpus c, LoadCorpus(o, false));
  std::ofstream csv;
  RETURN_IF_ERROR(OpenCsv(o.csv, &csv, "machines,dims,imbalance,cells,pages,fine_grain"));
  for (double fine : {o.fine_grain, o.threshold}) {
  PartitionExperimentOptions variant = o;
  variant.fine_grain = fine;
  for (uint32_t dims : {1u, 2u, 3u}) {
    const LengthSample s = Fold(c, dims);
    for (uint32_t m : o.machines) {
      ASSIGN_OR_RETURN(PartitionMap map, BuildPartitionMap(s, Build(dims, m, o.threshold, pb::PartitionMap::RHO_BOX, 1.0,
                                                                    variant)));
      std::vector<double> load(m, 0.0);
      for (size_t i = 0; i < s.size(); ++i) load[map.MachineOf(map.Home(s.Vector(i, map.proto().feature())))] += 1;
      const double imb = Imbalance(load);
      csv << m << "," << dims << "," << imb << "," << map.cells() << "," << s.size() << "," << fine << "\n";
      spdlog::info("fig4: {}D, {} machines, fine-grain {}: imbalance {:.3f} ({} cells)", dims, m, fine, imb, map.cells());
    }
  }
  }
  return Status::Ok();
}

Status RunCommunicationFigure(const PartitionExperimentOptions& o) {
  ASSIGN_OR_RETURN(Corpus c, LoadCorpus(o, false));
  const LengthSample s = Fold(c, 3);
  const std::vector<uint32_t> eval_idx = Spread(c.urls.size(), o.max_eval_pages);
  const LengthSample eval = Fold(c, 3, &eval_idx);
  std::ofstream csv;
  RETURN_IF_ERROR(OpenCsv(o.csv, &csv, "machines,threshold,routing,rho,communication_reduction,machines_contacted,cells_contacted"));
  for (auto routing : {pb::PartitionMap::RHO_BOX, pb::PartitionMap::EXACT_L1}) {
    for (double t : o.thresholds) {
      for (uint32_t m : o.machines) {
        ASSIGN_OR_RETURN(PartitionMap map, BuildPartitionMap(s, Build(3, m, t, routing, 1.0, o)));
        const MapEvaluation e = EvaluateMap(map, eval);
        const char* name = routing == pb::PartitionMap::EXACT_L1 ? "exact" : "rho";
        csv << m << "," << t << "," << name << "," << map.proto().rho() << "," << e.communication_reduction << ","
            << e.mean_machines_contacted << "," << e.mean_cells_contacted << "\n";
        spdlog::info("fig5: {} t={} {} machines: {:.1f}% avoided", name, t, m, 100 * e.communication_reduction);
      }
    }
  }
  return Status::Ok();
}

Status RunStabilityExperiment(const PartitionExperimentOptions& o) {
  ASSIGN_OR_RETURN(Corpus c, LoadCorpus(o, false));
  constexpr int kSamples = 11;
  std::vector<std::vector<uint32_t>> bucket(kSamples);
  for (uint32_t i = 0; i < c.urls.size(); ++i) {
    bucket[XXH3_64bits_withSeed(c.urls[i].data(), c.urls[i].size(), 0x53544142) % kSamples].push_back(i);
  }
  std::ofstream csv;
  RETURN_IF_ERROR(OpenCsv(o.csv, &csv,
                          "samples_kind,machines,dims,train_imbalance,mean_imbalance,stddev,cv,samples,pages_per_sample"));
  // Two kinds of "other samples": the ten other elevenths as they are (they differ only by
  // sampling noise), and the same ten with content drift: sample k's lengths scaled by
  // 0.91, 0.93, ..., 1.09 (pages grew or shrank by up to 9%, as a recrawl months later might).
  for (const char* kind : {"same_distribution", "drifted_lengths"}) {
    const bool drift = std::string_view(kind) == "drifted_lengths";
    for (uint32_t dims : {1u, 2u, 3u}) {
      const LengthSample train = Fold(c, dims, &bucket[0]);
      std::vector<LengthSample> tests;
      for (int k = 1; k < kSamples; ++k) {
        LengthSample t = Fold(c, dims, &bucket[k]);
        if (drift) t = Scaled(t, 0.91 + 0.02 * (k - 1));
        tests.push_back(std::move(t));
      }
      for (uint32_t m : o.machines) {
        ASSIGN_OR_RETURN(PartitionMap map, BuildPartitionMap(train, Build(dims, m, o.threshold, pb::PartitionMap::RHO_BOX,
                                                                          1.0, o)));
        std::vector<double> imb;
        for (const auto& t : tests) imb.push_back(EvaluateMap(map, t).imbalance);
        const double mean = std::accumulate(imb.begin(), imb.end(), 0.0) / imb.size();
        double var = 0;
        for (double x : imb) var += (x - mean) * (x - mean);
        const double sd = std::sqrt(var / imb.size());
        csv << kind << "," << m << "," << dims << "," << EvaluateMap(map, train).imbalance << "," << mean << "," << sd
            << "," << sd / mean << "," << tests.size() << "," << tests[0].size() << "\n";
        spdlog::info("stability ({}): {}D, {} machines: imbalance {:.3f} +- {:.4f} (CV {:.2f}%)", kind, dims, m, mean,
                     sd, 100 * sd / mean);
      }
    }
  }
  return Status::Ok();
}

Status RunRoutingRecall(const PartitionExperimentOptions& o) {
  ASSIGN_OR_RETURN(Corpus c, LoadCorpus(o, true));
  const LengthSample s = Fold(c, 3);
  std::vector<std::vector<uint64_t>> sets = std::move(c.sets);
  AllPairsStats st;
  const std::vector<SimilarPair> pairs = ExactAllPairs(std::move(sets), {.threshold = o.threshold, .threads = o.threads}, &st);
  spdlog::info("recall: {} baseline pairs at t={}", pairs.size(), o.threshold);
  std::ofstream csv;
  RETURN_IF_ERROR(OpenCsv(o.csv, &csv, "routing,rho,machines,threshold,pairs,lost,lost_share,machines_contacted"));
  struct Mode { pb::PartitionMap::Routing routing; double rho; };
  std::vector<Mode> modes;
  for (double r : o.rhos) modes.push_back({pb::PartitionMap::RHO_BOX, r});
  modes.push_back({pb::PartitionMap::EXACT_L1, 1.0});
  const uint32_t machines = o.machines.empty() ? 64 : o.machines.back();
  std::vector<uint32_t> cells;
  for (const Mode& mode : modes) {
    ASSIGN_OR_RETURN(PartitionMap map, BuildPartitionMap(s, Build(3, machines, o.threshold, mode.routing, mode.rho,
                                                                  o)));
    const auto feature = map.proto().feature();
    uint64_t lost = 0;
    for (const SimilarPair& p : pairs) {
      // p.b was seen later: it is the page being routed, p.a is resident.
      map.RouteCells(s.Vector(p.b, feature), &cells);
      if (!std::binary_search(cells.begin(), cells.end(), map.Home(s.Vector(p.a, feature)))) ++lost;
    }
    const MapEvaluation e = EvaluateMap(map, s);
    const char* name = mode.routing == pb::PartitionMap::EXACT_L1 ? "exact" : "rho";
    const double share = pairs.empty() ? 0 : static_cast<double>(lost) / pairs.size();
    csv << name << "," << mode.rho << "," << machines << "," << o.threshold << "," << pairs.size() << "," << lost << ","
        << share << "," << e.mean_machines_contacted << "\n";
    spdlog::info("recall: {} rho={}: {} of {} pairs lost ({:.3f}%), {:.2f} machines contacted", name, mode.rho, lost,
                 pairs.size(), 100 * share, e.mean_machines_contacted);
  }
  return Status::Ok();
}

}  // namespace neardup
