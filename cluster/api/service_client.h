// ServiceClient: what a program driving a running Tier 1 server needs from the crawlers' HTTP API
// (cluster/api/http_api.h): send crawl records (POST /v1/pages, in requests of up to batch_records
// lines, retried on 429 and 503 and on a lost connection), wait until everything accepted has
// been decided, ask the status of many URLs at once, and read /metrics. Used by `neardup ingest`
// and by `neardup eval --server`.
//
//   ASSIGN_OR_RETURN(auto c, ServiceClient::Create({.server = "http://127.0.0.1:8080"}));
//   for (...) RETURN_IF_ERROR(c->AddLine(line, line_no));
//   RETURN_IF_ERROR(c->FlushLines());
//   RETURN_IF_ERROR(c->AwaitSettled(std::chrono::minutes(10)));
//   ASSIGN_OR_RETURN(std::vector<std::string> replies, c->Statuses(urls, 4));
//
// A line the server refuses as bad (400 naming it) is logged with its line number, counted in
// refused, and left out; the rest of its request is sent again. Any other answer but 202, 429 and
// 503 refuses the whole request (logged, counted). Thread safety: one thread at a time (Statuses
// opens connections of its own on threads of its own).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cluster/http/http_client.h"
#include "common/status.h"

namespace neardup::cluster {

struct ServiceClientOptions {
  std::string server;              // http://host:port or https://host:port
  std::string token;               // the writers' bearer token ("" for none)
  std::string ca_file;             // https: the CA the server's certificate is checked against ("" the system's)
  uint64_t batch_records = 1000;   // lines per ingest request
  uint32_t max_retries = 20;       // attempts per request on 429, 503 or a lost connection
  std::string source = "input";    // names the lines' source in messages
  std::chrono::milliseconds timeout = std::chrono::seconds(30);  // per request
};

class ServiceClient {
 public:
  // InvalidArgument for a server address that is not http(s)://host:port, or an unreadable CA file.
  static StatusOr<std::unique_ptr<ServiceClient>> Create(ServiceClientOptions options);

  // Queues one record's line (line_no: its line in the source, for messages); a request goes out
  // once batch_records lines are queued. Unavailable when the server stopped accepting (not
  // reachable, or still busy after max_retries): the lines not accepted are then dropped.
  // FailedPrecondition when the server refused the request's credentials (401 or 403): no
  // request after it would be accepted either.
  Status AddLine(std::string line, uint64_t line_no);
  // Sends what is queued. Errors as AddLine.
  Status FlushLines();
  struct IngestCounts {
    uint64_t sent = 0;      // lines given to AddLine
    uint64_t accepted = 0;  // lines the server acknowledged (202)
    uint64_t refused = 0;   // lines refused (bad, or their request was)
  };
  const IngestCounts& ingest_counts() const { return counts_; }

  // GET /metrics, as sample name (with its labels, as written) -> value. Unavailable when the
  // server does not answer; Corruption for a reply that is not 200.
  StatusOr<std::map<std::string, double>> Metrics();
  // Polls /metrics until no accepted page is pending and the ingest log holds nothing the batch
  // loop has not committed (neardup_pending_pages and neardup_ingest_backlog_bytes both 0).
  // DeadlineExceeded past `timeout`; errors as Metrics.
  Status AwaitSettled(std::chrono::milliseconds timeout);
  // GET /v1/status?url=U for each URL, over `connections` kept-alive connections at once: each
  // reply's JSON body, in the order of `urls`. Errors: the first connection's failure, or
  // Corruption naming the URL for a reply other than 200 and 404.
  StatusOr<std::vector<std::string>> Statuses(const std::vector<std::string>& urls, unsigned connections);

 private:
  explicit ServiceClient(ServiceClientOptions o, std::unique_ptr<HttpClient> http)
      : o_(std::move(o)), http_(std::move(http)) {}
  Status Send();

  ServiceClientOptions o_;
  std::unique_ptr<HttpClient> http_;
  std::vector<std::string> lines_;
  uint64_t first_line_ = 0;  // the first queued line's number
  IngestCounts counts_;
};

}  // namespace neardup::cluster
