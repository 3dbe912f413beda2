// neardup ingest and neardup status: command-line clients of the crawlers' HTTP API
// (cluster/http_api.h).
#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <thread>

#include "cli/commands.h"
#include "cluster/http_client.h"
#include "cluster/service_client.h"

namespace neardup::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The token from a file (first line), or "".
StatusOr<std::string> ReadToken(const std::string& file) {
  if (file.empty()) return std::string();
  std::ifstream f(file);
  if (!f) return InvalidArgument("cannot read the bearer token file " + file);
  std::string t;
  std::getline(f, t);
  return t;
}

}  // namespace

void RegisterClients(CLI::App& app, int* exit_code) {
  // neardup ingest
  auto* ingest = app.add_subcommand("ingest", "Send a crawl (JSON Lines records) to a Tier 1 server's API");
  struct IngestArgs {
    std::string server, input, token_file;
    uint64_t batch_records = 1000;
    uint32_t max_retries = 20;
  };
  auto ia = std::make_shared<IngestArgs>();
  ingest->add_option("--server", ia->server, "the API, http://host:port")->required();
  ingest->add_option("--input", ia->input, "crawl JSON Lines")->required();
  ingest->add_option("--bearer-token-file", ia->token_file, "file holding the writers' bearer token");
  ingest->add_option("--batch-records", ia->batch_records, "records per request")->capture_default_str()->check(CLI::PositiveNumber);
  ingest->add_option("--max-retries", ia->max_retries, "attempts per request on 429, 503 or a lost connection")->capture_default_str();
  ingest->footer(
      "Exit code: 0 every record accepted; 1 some lines refused as bad (each named, the rest accepted); "
      "3 the server stopped accepting (unreachable, or still busy after --max-retries).");
  ingest->callback([ia, exit_code] {
    auto token = ReadToken(ia->token_file);
    if (!token.ok()) {
      spdlog::error("{}", token.status().message());
      *exit_code = 2;
      return;
    }
    cluster::ServiceClientOptions so;
    so.server = ia->server;
    so.token = *token;
    so.batch_records = ia->batch_records;
    so.max_retries = ia->max_retries;
    so.source = ia->input;
    auto client = cluster::ServiceClient::Create(so);
    if (!client.ok()) {
      spdlog::error("{}", client.status().message());
      *exit_code = 2;
      return;
    }
    std::ifstream in(ia->input, std::ios::binary);
    if (!in) {
      spdlog::error("cannot read {}", ia->input);
      *exit_code = 2;
      return;
    }
    const auto start = Clock::now();
    auto last_report = start;
    std::string line;
    uint64_t line_no = 0;
    Status s;
    while (s.ok() && std::getline(in, line)) {
      s = (*client)->AddLine(std::move(line), ++line_no);
      if (Clock::now() - last_report > std::chrono::seconds(5)) {
        last_report = Clock::now();
        spdlog::info("ingest: {} records accepted ({:.0f}/s)", (*client)->ingest_counts().accepted,
                     static_cast<double>((*client)->ingest_counts().accepted) /
                         std::chrono::duration<double>(last_report - start).count());
      }
    }
    if (s.ok()) s = (*client)->FlushLines();
    if (!s.ok()) spdlog::error("{}", s.message());
    const cluster::ServiceClient::IngestCounts& c = (*client)->ingest_counts();
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    std::cout << "ingest: " << c.accepted << " of " << c.sent << " records accepted in " << secs << " s ("
              << (secs > 0 ? static_cast<double>(c.accepted) / secs : 0) << " records/s); " << c.refused
              << " refused\n";
    *exit_code = !s.ok() ? 3 : c.refused > 0 ? 1 : 0;
  });
}

}  // namespace neardup::cli

namespace neardup::cli {

int StatusOverHttp(const std::string& server, const std::vector<std::string>& urls) {
  auto client = cluster::HttpClient::Create(server);
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
