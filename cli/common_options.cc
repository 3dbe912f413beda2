#include "cli/common_options.h"

#include "common/config.h"

namespace neardup::cli {

void AddSharedOptions(CLI::App* cmd, SharedOptions* o) {
  cmd->add_option("--config", o->config, "configuration (Protobuf text format, e.g. configs/embedded.textproto)");
  cmd->add_option("--threshold", o->threshold, "Jaccard threshold in (0, 1] (default 0.9)");
  cmd->add_option("--shingle-k", o->shingle_k, "words per shingle, 1..16 (default 5)");
  cmd->add_option("--dims", o->dims, "length dimensions, 1..16 (default 3)");
  cmd->add_option("--threads", o->threads, "worker threads (default: one per core)");
  cmd->add_option("--max-line-bytes", o->max_line_bytes, "skip crawl lines longer than this (default 8 MiB)");
}

StatusOr<ResolvedOptions> ResolveShared(const SharedOptions& o) {
  pb::NeardupConfig cfg = DefaultConfig();
  pb::NeardupConfig written;
  if (!o.config.empty()) {
    ASSIGN_OR_RETURN(cfg, LoadConfig(o.config, &written));
  }
  ResolvedOptions r;
  auto from_file = [&](const char* param, bool set, const char* field) {
    if (set) r.given[param] = o.config + " " + field;
  };
  from_file("threshold", written.baseline().has_threshold(), "baseline.threshold");
  from_file("shingle_k", written.shingle().has_k(), "shingle.k");
  from_file("dims", written.shingle().has_dims(), "shingle.dims");
  from_file("routing", written.pipeline().has_routing(), "pipeline.routing");
  from_file("rho", written.pipeline().has_rho(), "pipeline.rho");
  from_file("shards", written.pipeline().has_shards(), "pipeline.shards");
  from_file("min_threshold", written.tier2().has_min_threshold(), "tier2.min_threshold");
  from_file("prefix_overlap", written.tier2().has_prefix_overlap(), "tier2.prefix_overlap");
  if (o.threshold) r.given["threshold"] = "--threshold";
  if (o.shingle_k) r.given["shingle_k"] = "--shingle-k";
  if (o.dims) r.given["dims"] = "--dims";
  r.threshold = o.threshold.value_or(cfg.baseline().threshold());
  if (!(r.threshold > 0 && r.threshold <= 1)) {
    return InvalidArgument("--threshold must be in (0, 1], got " + std::to_string(r.threshold));
  }
  r.signer.k = o.shingle_k.value_or(static_cast<int>(cfg.shingle().k()));
  r.signer.dims = o.dims.value_or(static_cast<int>(cfg.shingle().dims()));
  if (Status s = ValidateSignerOptions(r.signer); !s.ok()) return InvalidArgument("--shingle-k/--dims: " + s.message());
  r.reader.max_line_bytes = o.max_line_bytes.value_or(cfg.reader().max_line_bytes());
  if (r.reader.max_line_bytes < 1024) return InvalidArgument("--max-line-bytes must be at least 1024");
  r.threads = o.threads.value_or(static_cast<int>(cfg.baseline().threads()));
  if (r.threads < 0) return InvalidArgument("--threads must be >= 0");
  r.config = cfg;
  return r;
}

}  // namespace neardup::cli
