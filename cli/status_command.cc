// neardup status: each URL's duplicate status from a stopped run's store or a Tier 1 server's API.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "cli/store_queries.h"
#include "cluster/http/http_client.h"
#include "cluster/tier2_client/remote_shard_set.h"
#include "common/config.h"
#include "common/json_write.h"
#include "document/crawl_signer.h"
#include "partitioner/partition_map.h"
#include "pipeline/pipeline.h"
#include "pipeline/store.h"
#include "tier1/tier1.h"

namespace neardup::cli {

// The crawler's question, asked of a stopped run's store: for each record of --input (a URL, with
// or without its current content), its status; content given is what gets verified.
void RegisterStatus(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("status", "Duplicate status of URLs from a run's store (verifying the content given, if "
                                          "any), or from a Tier 1 server's API (--server)");
  struct Args {
    std::string store, input, server, ca_file;
    std::vector<std::string> urls;
    SharedOptions shared;
  };
  auto a = std::make_shared<Args>();
  auto* store = cmd->add_option("--store", a->store, "store directory of neardup run");
  auto* server = cmd->add_option("--server", a->server, "or ask a Tier 1 server's API, http(s)://host:port");
  cmd->add_option("--ca-file", a->ca_file, "https: the CA the API's certificate is checked against "
                                           "(default: the --config cluster's, else the system's)");
  store->excludes(server);
  cmd->add_option("--url", a->urls, "URL to ask about (repeatable)");
  cmd->add_option("--input", a->input, "crawl records to ask about (JSON Lines; content, when present, is verified)");
  AddSharedOptions(cmd, &a->shared);
  cmd->callback([a, exit_code] {
    auto opts = ResolveShared(a->shared);
    if (!opts.ok()) { *exit_code = ReportFailure(opts.status(), 2); return; }
    if (a->urls.empty() && a->input.empty()) { *exit_code = ReportFailure(InvalidArgument("give --url or --input"), 2); return; }
    // A running cluster's API: --server, or the cluster's --config without --store.
    const bool cluster_config = a->store.empty() && !a->shared.config.empty();
    if (!a->server.empty() || cluster_config) {
      if (!a->input.empty()) { *exit_code = ReportFailure(InvalidArgument("--server takes --url"), 2); return; }
      auto target = ResolveClusterClient(a->shared.config, a->server, "", a->ca_file);
      if (!target.ok()) { *exit_code = ReportFailure(target.status(), 2); return; }
      *exit_code = StatusOverHttp(target->server, target->ca_file, a->urls);
      return;
    }
    if (a->store.empty()) { *exit_code = ReportFailure(InvalidArgument("give --store or --server"), 2); return; }
    // Read-only: the store's files stay as they are, and its own parameters rule.
    auto opened = OpenStoreForQueries(a->store, &*opts);
    if (!opened.ok()) {
      *exit_code = ReportFailure(opened.status(), opened.status().code() == StatusCode::kNotFound ? 2 : 1);
      return;
    }
    tier1::Tier1 t1(opened->groups.get(), opened->signatures.get(),
                    tier1::Tier1OptionsFromConfig(opts->config.tier1(), opts->threshold));
    auto answer = [&](const std::string& url, const pb::PageSignature* current) -> Status {
      tier1::StatusAnswer ans;
      RETURN_IF_ERROR(t1.Query(url, current, &ans));
      std::string out = "{\"url\":";
      AppendJsonString(&out, url);
      out += ",\"status\":\"" + std::string(tier1::StatusName(ans.status)) + "\",\"group\":" + std::to_string(ans.group) +
             ",\"winner\":";
      AppendJsonString(&out, ans.winner_url);
      if (ans.verified && !ans.redirect) AppendJsonField(&out, "similarity_to_winner", ans.similarity_to_winner);
      if (ans.status == tier1::StatusAnswer::kDuplicate && !ans.duplicate_of.empty()) {
        out += ",\"duplicate_of\":";
        AppendJsonString(&out, ans.duplicate_of);
        if (!ans.redirect) AppendJsonField(&out, "similarity_to_duplicate_of", ans.similarity_to_duplicate_of);
      }
      out += ans.verified ? ",\"verified\":true" : ",\"verified\":false";
      if (ans.redirect) out += ",\"redirect\":true";
      out += current != nullptr ? ",\"content\":\"given\"" : ",\"content\":\"stored\"";
      out += ",\"map_version\":" + std::to_string(opened->map_version);
      if (ans.route) out += ",\"route\":\"" + std::string(tier1::ClassificationName(*ans.route)) + "\"";
      out += "}\n";
      std::fputs(out.c_str(), stdout);
      return Status::Ok();
    };
    for (const std::string& url : a->urls) {
      if (Status s = answer(url, nullptr); !s.ok()) { *exit_code = ReportFailure(s); return; }
    }
    if (!a->input.empty()) {
      CrawlSignerOptions so;
      so.signer = opts->signer;
      so.reader = opts->reader;
      so.threads = opts->threads;
      Status s = SignCrawl(a->input, so, [&](CrawlRecord& r, PageFeatures& f) -> Status {
        if (!r.has_content() || r.body.empty()) return answer(r.url, nullptr);
        const pb::PageSignature sig = ToProto(r.url, f, opts->signer);
        return answer(r.url, &sig);
      });
      if (!s.ok()) { *exit_code = ReportFailure(s); return; }
    }
  });
}

int StatusOverHttp(const std::string& server, const std::string& ca_file, const std::vector<std::string>& urls) {
  // Status reads are open to any client: no token.
  auto client = cluster::HttpClient::Create(server, {.ca_file = ca_file});
  if (!client.ok()) {
    spdlog::error("{}", client.status().message());
    return 2;
  }
  int code = 0;
  for (const std::string& url : urls) {
    auto r = (*client)->Request("GET", "/v1/status?url=" + cluster::UrlEncode(url), "");
    if (!r.ok()) {
      spdlog::error("{}", r.status().message());
      return 3;
    }
    std::string body = r->body;
    while (!body.empty() && body.back() == '\n') body.pop_back();
    std::cout << body << "\n";
    if (r->status != 200) code = 1;
  }
  return code;
}

}  // namespace neardup::cli
