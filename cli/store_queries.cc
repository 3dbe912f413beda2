#include "cli/store_queries.h"

#include <spdlog/spdlog.h>

#include "pipeline/store.h"

namespace neardup::cli {

int ReportFailure(const Status& s, int code) {
  spdlog::error("{}", s.message());
  return code;
}

StatusOr<ReadOnlyStore> OpenStoreForQueries(const std::string& dir, ResolvedOptions* opts) {
  pipeline::ShardSetOptions so;
  so.layout.dir = dir;
  ASSIGN_OR_RETURN(pipeline::OpenedStore opened,
                   pipeline::OpenStoreReadOnly(so.layout, opts->given, &opts->config, &opts->threshold, &opts->signer));
  so.config = opts->config;
  so.shards = opened.placement->shard_count();
  so.read_only = true;
  ASSIGN_OR_RETURN(std::unique_ptr<pipeline::ShardSet> shards, pipeline::OpenLocalShardSet(so));
  ReadOnlyStore out;
  out.map_version = opened.placement->generation();
  out.groups = std::move(opened.groups);
  out.signatures = std::make_unique<StoreSignatures>(std::move(opened.placement), std::move(shards));
  return out;
}

}  // namespace neardup::cli
