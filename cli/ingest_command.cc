// neardup ingest: a crawl sent to a Tier 1 server's crawlers' HTTP API (cluster/api/http_api.h).
#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "cluster/api/service_client.h"
#include "common/json_write.h"
#include "document/crawl_reader.h"

namespace neardup::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct IngestArgs {
  std::string server, input, token_file, config, ca_file;
  uint64_t batch_records = 1000;
  uint32_t max_retries = 20;
};

// The crawl to send: JSON Lines go as they are (the server reports a bad line by its number); a
// WARC file's response records go as the JSON Lines records they read as. Sets *warc for a WARC
// file, else opens *in.
Status OpenIngestSource(const std::string& path, std::ifstream* in, std::unique_ptr<CrawlReader>* warc) {
  if (IsWarcPath(path)) {
    ASSIGN_OR_RETURN(*warc, CrawlReader::Open(path, {}));
    return Status::Ok();
  }
  in->open(path, std::ios::binary);
  if (!*in) return IoError("cannot read " + path);
  return Status::Ok();
}

// Every line (or WARC record) through the client, with the rate logged every 5 s; the first error
// of the client (the server stopped accepting).
Status SendAll(cluster::ServiceClient* client, std::ifstream* in, CrawlReader* warc, Clock::time_point start) {
  auto last_report = start;
  std::string line;
  CrawlRecord record;
  uint64_t line_no = 0;
  Status s;
  while (s.ok()) {
    if (warc != nullptr) {
      if (!warc->Next(&record)) break;
      s = client->AddLine(FormatJsonLine(record), record.line);
    } else {
      if (!std::getline(*in, line)) break;
      s = client->AddLine(std::move(line), ++line_no);
    }
    if (Clock::now() - last_report > std::chrono::seconds(5)) {
      last_report = Clock::now();
      spdlog::info("ingest: {} records accepted ({:.0f}/s)", client->ingest_counts().accepted,
                   static_cast<double>(client->ingest_counts().accepted) /
                       std::chrono::duration<double>(last_report - start).count());
    }
  }
  if (s.ok()) s = client->FlushLines();
  return s;
}

// The exit code of `neardup ingest` (its footer).
int RunIngest(const IngestArgs& a) {
  auto target = ResolveClusterClient(a.config, a.server, a.token_file, a.ca_file);
  if (!target.ok()) {
    spdlog::error("{}", target.status().message());
    return 2;
  }
  cluster::ServiceClientOptions so;
  so.server = target->server;
  so.token = target->token;
  so.ca_file = target->ca_file;
  so.batch_records = a.batch_records;
  so.max_retries = a.max_retries;
  so.source = a.input;
  auto client = cluster::ServiceClient::Create(so);
  if (!client.ok()) {
    spdlog::error("{}", client.status().message());
    return 2;
  }
  std::ifstream in;
  std::unique_ptr<CrawlReader> warc;
  if (Status o = OpenIngestSource(a.input, &in, &warc); !o.ok()) {
    spdlog::error("{}", o.message());
    return 2;
  }
  const auto start = Clock::now();
  const Status s = SendAll(client->get(), &in, warc.get(), start);
  Status read = Status::Ok();
  if (warc != nullptr) {
    read = warc->status();
    if (!read.ok()) spdlog::error("{}", read.message());
    spdlog::info("ingest: {}: {}", a.input, SummarizeReader(warc->stats()));
  }
  if (!s.ok()) spdlog::error("{}", s.message());
  const cluster::ServiceClient::IngestCounts& c = (*client)->ingest_counts();
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  std::cout << "ingest: " << c.accepted << " of " << c.sent << " records accepted in " << secs << " s ("
            << (secs > 0 ? static_cast<double>(c.accepted) / secs : 0) << " records/s); " << c.refused
            << " refused\n";
  return !s.ok() ? 3 : c.refused > 0 || !read.ok() ? 1 : 0;
}

}  // namespace

void RegisterIngest(CLI::App& app, int* exit_code) {
  auto* ingest = app.add_subcommand("ingest", "Send a crawl (JSON Lines records, or a .warc / .warc.gz file) to a Tier 1 server's API");
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
  ingest->callback([ia, exit_code] { *exit_code = RunIngest(*ia); });
}

}  // namespace neardup::cli
