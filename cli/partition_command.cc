// neardup partition build | partition route: partition maps built from a crawl sample and pages
// routed with them (partitioner/).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "cli/partition_options.h"
#include "common/config.h"
#include "common/json_write.h"
#include "document/crawl_signer.h"
#include "partitioner/crawl_sample.h"
#include "partitioner/map_builder.h"
#include "partitioner/rebalance.h"
#include "pipeline/rebalance_store.h"

#include <csignal>
#include <cstdlib>

namespace neardup::cli {
namespace {

std::string RoutingName(pb::PartitionMap::Routing r) { return r == pb::PartitionMap::EXACT_L1 ? "exact" : "rho"; }

std::string NumberList(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ",";
    AppendJsonNumber(&s, v[i]);
  }
  return s + "]";
}

// The JSON these commands write keeps its first key names: "machine" there is a shard and
// "partition" a cell (the reports', route lines' and plans' format does not change).
std::string EvaluationJson(const partitioner::MapEvaluation& e) {
  std::string s = "{\"pages\":" + std::to_string(e.pages) + ",\"pages_per_machine\":" + NumberList(e.shard_pages);
  AppendJsonField(&s, "imbalance", e.imbalance);
  AppendJsonField(&s, "communication_reduction", e.communication_reduction);
  AppendJsonField(&s, "mean_machines_contacted", e.mean_shards_contacted);
  AppendJsonField(&s, "mean_cells_contacted", e.mean_cells_contacted);
  return s + "}";
}

struct BuildArgs {
  std::string input, out, report = "-", routing = ConfigDefaults().pipeline().routing(), rho = "auto";
  uint32_t shards = 64, cells_per_shard = ConfigDefaults().pipeline().cells_per_shard();
  double sample_rate = 1.0, rho_percentile = 90, fine_grain = 0.95;
  SharedOptions shared;
};

int RunBuild(const BuildArgs& a) {
  auto shared = ResolveShared(a.shared);
  if (!shared.ok()) return FailByCode(shared.status());
  if (a.routing != "exact" && a.routing != "rho") return FailByCode(InvalidArgument("--routing must be exact or rho"));
  // --dims and --shingle-k decide the signatures.
  auto sample = partitioner::SampleCrawl(
      a.input, SampleOptions(*shared, shared->signer, a.sample_rate, "partition build: sample"));
  if (!sample.ok()) return FailByCode(sample.status());
  const partitioner::RhoEstimate est = partitioner::EstimateRho(sample->sample, a.rho_percentile);
  partitioner::MapBuildOptions b;
  b.dims = static_cast<uint32_t>(shared->signer.dims);
  b.shards = a.shards;
  b.threshold = shared->threshold;
  b.routing = a.routing == "exact" ? pb::PartitionMap::EXACT_L1 : pb::PartitionMap::RHO_BOX;
  b.cells_per_shard = a.cells_per_shard;
  b.fine_grain = a.fine_grain;
  b.shingle_k = static_cast<uint32_t>(shared->signer.k);
  if (a.rho == "auto") {
    b.rho = est.rho;
  } else {
    try { b.rho = std::stod(a.rho); } catch (...) { return FailByCode(InvalidArgument("--rho must be a number >= 1 or auto")); }
  }
  auto map = partitioner::BuildPartitionMap(sample->sample, b);
  if (!map.ok()) return FailByCode(map.status());
  if (Status s = map->Save(a.out); !s.ok()) return FailByCode(s);
  const partitioner::MapEvaluation e = partitioner::EvaluateMap(*map, sample->sample);
  std::string r = "{\"map\":";
  AppendJsonString(&r, a.out);
  r += ",\"dims\":" + std::to_string(b.dims) + ",\"machines\":" + std::to_string(b.shards) +
       ",\"cells\":" + std::to_string(map->cells()) + ",\"routing\":\"" + RoutingName(b.routing) + "\",\"threshold\":";
  AppendJsonNumber(&r, b.threshold);
  AppendJsonField(&r, "rho", map->proto().rho());
  r += ",\"rho_estimate\":{\"percentile\":";
  AppendJsonNumber(&r, est.percentile);
  AppendJsonField(&r, "delta", est.delta);
  AppendJsonField(&r, "epsilon", est.epsilon);
  AppendJsonField(&r, "rho", est.rho);
  r += "}";
  AppendJsonField(&r, "sample_rate", a.sample_rate);
  r += ",\"sample\":" + EvaluationJson(e) + "}\n";
  if (Status s = WriteText(a.report, r); !s.ok()) return FailByCode(s);
  spdlog::info("partition build: {} cells on {} shards, imbalance {:.3f}, communication avoided {:.1f}%",
               map->cells(), b.shards, e.imbalance, 100 * e.communication_reduction);
  return 0;
}

int RunRoute(const std::string& map_path, const std::string& input, const SharedOptions& shared_args) {
  auto map = partitioner::PartitionMap::Load(map_path);
  if (!map.ok()) return FailByCode(map.status());
  auto shared = ResolveShared(shared_args);
  if (!shared.ok()) return FailByCode(shared.status());
  CrawlSignerOptions so;
  so.signer = map->signer_options();
  so.reader = shared->reader;
  so.threads = shared->threads;
  std::vector<uint32_t> cells, shards;
  std::string line;
  Status s = SignCrawl(input, so, [&](CrawlRecord& rec, PageFeatures& f) {
    line.assign("{\"url\":");
    AppendJsonString(&line, rec.url);
    if (rec.gone) {
      line.append(",\"gone\":true}\n");
    } else if (rec.is_redirect()) {
      line.append(",\"redirect\":true}\n");
    } else {
      const auto v = map->VectorOf(f);
      const uint32_t home = map->Home(v);
      map->RouteCells(v, &cells);
      map->RouteShards(v, &shards);
      line.append(",\"home\":" + std::to_string(home) + ",\"home_machine\":" + std::to_string(map->ShardOf(home)) +
                  ",\"partitions\":[");
      for (size_t i = 0; i < cells.size(); ++i) line.append(i ? "," : "").append(std::to_string(cells[i]));
      line.append("],\"machines\":[");
      for (size_t i = 0; i < shards.size(); ++i) line.append(i ? "," : "").append(std::to_string(shards[i]));
      line.append("]}\n");
    }
    std::fwrite(line.data(), 1, line.size(), stdout);
    return Status::Ok();
  });
  return s.ok() ? 0 : FailByCode(s);
}

}  // namespace

void RegisterPartition(CLI::App& app, int* exit_code) {
  auto* part = app.add_subcommand("partition", "Build partition maps and route pages with them");
  part->require_subcommand(1);

  auto* build = part->add_subcommand("build", "Build a partition map from a sample of a crawl");
  auto b = std::make_shared<BuildArgs>();
  build->add_option("--input", b->input, "crawl JSON Lines")->required();
  build->add_option("--out", b->out, "partition map to write (binary protobuf)")->required();
  build->add_option("--report", b->report, "report JSON (- for stdout)")->capture_default_str();
  build->add_option("--shards", b->shards, "shards")->capture_default_str()->check(CLI::PositiveNumber);
  // --machines and --cells-per-machine: the flags' former names, still accepted (not listed).
  build->add_option("--machines", b->shards)->check(CLI::PositiveNumber)->group("");
  build->add_option("--sample-rate", b->sample_rate, "share of URLs sampled")->capture_default_str();
  build->add_option("--routing", b->routing, "exact (L1 bound, loses no pair) or rho (the paper's box)")->capture_default_str();
  build->add_option("--rho", b->rho, "enlarging factor for rho routing, or auto (Section 4.2 estimate)")->capture_default_str();
  build->add_option("--rho-percentile", b->rho_percentile, "percentile of sampled delta and epsilon for auto")->capture_default_str();
  build->add_option("--cells-per-shard", b->cells_per_shard, "cells per shard")->capture_default_str();
  build->add_option("--cells-per-machine", b->cells_per_shard)->group("");
  build->add_option("--fine-grain", b->fine_grain, "SpotSigs fine-grain ratio (0 = the threshold, as in the paper)")->capture_default_str();
  AddSharedOptions(build, &b->shared);
  build->callback([b, exit_code] { *exit_code = RunBuild(*b); });

  auto* route = part->add_subcommand("route", "Print each page's home cell and the cells it is compared against");
  auto map_path = std::make_shared<std::string>();
  auto input = std::make_shared<std::string>();
  auto rs = std::make_shared<SharedOptions>();
  route->add_option("--map", *map_path, "partition map")->required();
  route->add_option("--input", *input, "crawl JSON Lines")->required();
  AddSharedOptions(route, rs.get());
  route->callback([map_path, input, rs, exit_code] { *exit_code = RunRoute(*map_path, *input, *rs); });
}

}  // namespace neardup::cli
