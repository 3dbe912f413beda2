// neardup ingest: a crawl sent to a Tier 1 server's crawlers' HTTP API (cluster/http_api.h).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <thread>

#include "cli/commands.h"
#include "cluster/bearer_token.h"
#include "cluster/http_client.h"
#include "cluster/service_client.h"
#include "common/json_write.h"
#include "document/crawl_reader.h"

namespace neardup::cli {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

void RegisterIngest(CLI::App& app, int* exit_code) {
  // neardup ingest
  auto* ingest = app.add_subcommand("ingest", "Send a crawl (JSON Lines records, or a .warc / .warc.gz file) to a Tier 1 server's API");
  struct IngestArgs {
    std::string server, input, token_file, config, ca_file;
    uint64_t batch_records = 1000;
    uint32_t max_retries = 20;
  };
  auto ia = std::make_shared<IngestArgs>();
  ingest->add_option("--server", ia->server, "the API, http(s)://host:port (default: the --config cluster's)");
  ingest->add_option("--config", ia->config, "the cluster's configuration: its API and the token cluster up made");
  ingest->add_option("--input", ia->input, "crawl: JSON Lines, or WARC (.warc, .warc.gz: its HTML responses)")->required();
  ingest->add_option("--bearer-token-file", ia->token_file, "file holding the writers' bearer token");
  ingest->add_option("--ca-file", ia->ca_file, "https: the CA the API's certificate is checked against "
                                               "(default: the --config cluster's, else the system's)");
  ingest->add_option("--batch-records", ia->batch_records, "records per request")->capture_default_str()->check(CLI::PositiveNumber);
  ingest->add_option("--max-retries", ia->max_retries, "attempts per request on 429, 503 or a lost connection")->capture_default_str();
  ingest->footer(
      "Exit code: 0 every record accepted; 1 some lines refused as bad (each named, the rest accepted) or the WARC "
      "file could not be read to its end; "
      "3 the server stopped accepting (unreachable, or still busy after --max-retries).");
  ingest->callback([ia, exit_code] {
    auto target = ResolveClusterClient(ia->config, ia->server, ia->token_file, ia->ca_file);
    if (!target.ok()) {
      spdlog::error("{}", target.status().message());
      *exit_code = 2;
      return;
    }
    cluster::ServiceClientOptions so;
    so.server = target->server;
    so.token = target->token;
    so.ca_file = target->ca_file;
    so.batch_records = ia->batch_records;
    so.max_retries = ia->max_retries;
    so.source = ia->input;
    auto client = cluster::ServiceClient::Create(so);
    if (!client.ok()) {
      spdlog::error("{}", client.status().message());
      *exit_code = 2;
      return;
    }
    // JSON Lines go as they are (the server reports a bad line by its number); a WARC file's
    // response records go as the JSON Lines records they read as (what was skipped is reported).
    std::ifstream in;
    std::unique_ptr<CrawlReader> warc;
    if (IsWarcPath(ia->input)) {
      auto r = CrawlReader::Open(ia->input, {});
      if (!r.ok()) {
        spdlog::error("{}", r.status().message());
        *exit_code = 2;
        return;
      }
      warc = std::move(*r);
    } else {
      in.open(ia->input, std::ios::binary);
      if (!in) {
        spdlog::error("cannot read {}", ia->input);
        *exit_code = 2;
        return;
      }
    }
    const auto start = Clock::now();
    auto last_report = start;
    std::string line;
    CrawlRecord record;
    uint64_t line_no = 0;
    Status s;
    while (s.ok()) {
      if (warc != nullptr) {
        if (!warc->Next(&record)) break;
        s = (*client)->AddLine(FormatJsonLine(record), record.line);
      } else {
        if (!std::getline(in, line)) break;
        s = (*client)->AddLine(std::move(line), ++line_no);
      }
      if (Clock::now() - last_report > std::chrono::seconds(5)) {
        last_report = Clock::now();
        spdlog::info("ingest: {} records accepted ({:.0f}/s)", (*client)->ingest_counts().accepted,
                     static_cast<double>((*client)->ingest_counts().accepted) /
                         std::chrono::duration<double>(last_report - start).count());
      }
    }
    if (s.ok()) s = (*client)->FlushLines();
    Status read = Status::Ok();
    if (warc != nullptr) {
      read = warc->status();
      if (!read.ok()) spdlog::error("{}", read.message());
      spdlog::info("ingest: {}: {}", ia->input, SummarizeReader(warc->stats()));
    }
    if (!s.ok()) spdlog::error("{}", s.message());
    const cluster::ServiceClient::IngestCounts& c = (*client)->ingest_counts();
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    std::cout << "ingest: " << c.accepted << " of " << c.sent << " records accepted in " << secs << " s ("
              << (secs > 0 ? static_cast<double>(c.accepted) / secs : 0) << " records/s); " << c.refused
              << " refused\n";
    *exit_code = !s.ok() ? 3 : c.refused > 0 || !read.ok() ? 1 : 0;
  });
}

}  // namespace neardup::cli
