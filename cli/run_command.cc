// neardup run: the embedded two-tier pipeline over a crawl (pipeline/pipeline.h).
#include <spdlog/spdlog.h>

#include <cstdio>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "cli/store_queries.h"
#include "cluster/tier2_client/remote_shard_set.h"
#include "cluster/http/tls.h"
#include "common/config.h"
#include "partitioner/partition_map.h"
#include "pipeline/pipeline.h"
#include "pipeline/shard_set.h"
#include "pipeline/store.h"
#include "tier1/tier1.h"

namespace neardup::cli {

void RegisterRun(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("run", "Replay a crawl through Tier 1 and P Tier 2 shards in one process: groups, winners, statuses");
  struct Args {
    std::string input, out, status_out, store, map;
    std::optional<uint32_t> batch, shards;
    std::optional<std::string> routing;
    uint64_t max_records = 0;
    bool abandon_interrupted = false;
    std::vector<std::string> tier2;
    std::string tier2_tls_dir;
    SharedOptions shared;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--input", a->input, "crawl JSON Lines")->required();
  cmd->add_option("--out", a->out, "write every page with its group, winner and status here (JSON Lines)");
  cmd->add_option("--status-out", a->status_out, "write each page's status after its batch commits (JSON Lines)");
  cmd->add_option("--store", a->store, "store directory (kept; a run on an existing store resumes); default: temporary");
  cmd->add_option("--map", a->map, "partition map to use when the store has none (default: built from a sample)");
  cmd->add_option("--batch", a->batch, "pages per batch (default tier2.batch_pages)");
  cmd->add_option("--shards", a->shards, "Tier 2 shards (default pipeline.shards)");
  cmd->add_option("--routing", a->routing, "exact or rho (default pipeline.routing)");
  cmd->add_option("--max-records", a->max_records, "stop after this many input records (0 = all)");
  cmd->add_option("--tier2", a->tier2,
                  "Tier 2 servers (host:port, comma-separated) that hold the store's shards, shard m on server m % N; "
                  "default: the shards in this process")
      ->delimiter(',');
  cmd->add_option("--tier2-tls-dir", a->tier2_tls_dir,
                  "mutual TLS to the Tier 2 servers with DIR/ca.pem, member.pem, member.key (neardup certs init); "
                  "default: tier1_server.tier2_tls");
  cmd->add_flag("--abandon-interrupted", a->abandon_interrupted,
                "the store stopped in the middle of another input: leave its rest unread, take this one as the next crawl");
  AddSharedOptions(cmd, &a->shared);
  cmd->callback([a, exit_code] {
    auto opts = ResolveShared(a->shared);
    if (!opts.ok()) { *exit_code = ReportFailure(opts.status(), 2); return; }
    pipeline::PipelineOptions o;
    o.input = a->input;
    o.groups_out = a->out;
    o.status_out = a->status_out;
    o.store = a->store;
    o.map = a->map;
    o.config = opts->config;
    o.threshold = opts->threshold;
    o.signer = opts->signer;
    o.reader = opts->reader;
    o.threads = opts->threads;
    o.max_records = a->max_records;
    o.given = opts->given;
    o.abandon_interrupted = a->abandon_interrupted;
    if (!a->tier2.empty()) {
      cluster::RemoteShardSetOptions remote;
      remote.servers = a->tier2;
      remote.tls = a->tier2_tls_dir.empty() ? cluster::TlsFiles::From(opts->config.tier1_server().tier2_tls())
                                            : cluster::TlsFiles::InDir(a->tier2_tls_dir);
      o.open_shards = [remote](const pipeline::ShardSetOptions& so) { return cluster::OpenRemoteShardSet(remote, so); };
    }
    o.batch_pages = a->batch.value_or(o.config.tier2().batch_pages());
    if (a->shards) {
      if (auto rule = ConfigRangeError("pipeline.shards", *a->shards); !rule.empty()) {
        *exit_code = ReportFailure(InvalidArgument("--shards " + rule), 2);
        return;
      }
      o.config.mutable_pipeline()->set_shards(*a->shards);
      o.given["shards"] = "--shards";
    }
    if (a->routing) {
      if (*a->routing != "exact" && *a->routing != "rho") { *exit_code = ReportFailure(InvalidArgument("--routing must be exact or rho"), 2); return; }
      o.config.mutable_pipeline()->set_routing(*a->routing);
      o.given["routing"] = "--routing";
    }
    if (o.batch_pages < 1 || o.batch_pages > o.config.tier2().max_batch_pages()) {
      *exit_code = ReportFailure(InvalidArgument("--batch must be in 1..tier2.max_batch_pages"), 2);
      return;
    }
    auto s = pipeline::RunPipeline(o);
    if (!s.ok()) {
      // A bad option is bad usage (2), like every command's; anything else failed while running (1).
      *exit_code = ReportFailure(s.status(), s.status().code() == StatusCode::kInvalidArgument ? 2 : 1);
      return;
    }
    std::fputs(pipeline::FormatSummary(*s).c_str(), stdout);
  });
}

}  // namespace neardup::cli
