// HttpApi: the crawlers' HTTP API over a Tier1Service (cluster/tier1_server/tier1_service.h), as an
// HttpHandler for cluster/http/http_server.h. JSON bodies are proto/api.proto's messages in Protobuf's
// JSON mapping.
//
//   POST   /v1/pages           JSON Lines crawl records -> 202 {accepted} once durable; 400 names
//                              the first bad line (nothing accepted); 429 + Retry-After past the
//                              backpressure bounds; 503 when the log failed or the server stops
//   DELETE /v1/pages?url=U     the page is gone (a `gone` record through the same path) -> 202
//   GET    /v1/status?url=U    -> 200 StatusReply (pending pages carry their completeness)
//   POST   /v1/status          one crawl record with its content: what its status would be, from
//                              the committed state (Tier1Service::Probe); nothing is stored
//   GET    /v1/groups/{id}     -> 200 GroupReply, 404 for an unknown group
//   POST   /v1/emails, POST /v1/emails/annotate, GET /v1/templates/{id}
//                              the email module's endpoints (cluster/email_api/email_api.h), when set_email
//                              gave one
//   POST   /v1/admin/rebalance {"shards":N,"tier2":["host:port",...],"max_move":F,"max_mb_per_s":R,
//                              "dry_run":B} (each optional): starts a rebalance of the Tier 2 shards
//                              (Tier1Service::StartRebalance) -> 202 with its state; 409 while
//                              one runs; 400 for a bad field or server list
//   GET    /v1/admin/rebalance -> 200 the last rebalance's state (ClusterRebalanceJson)
//   GET    /healthz            -> 200 {"status":"ok"} (with "map":"building" while a new store's map
//                                  is not built yet), or 503 with the reason
//   GET    /metrics            -> Prometheus text exposition (version 0.0.4)
//
// Access (cluster/http/http_access.h), checked on the request's header before its body is read
// (HeaderCheck) and again by Handle: writers (POST and DELETE /v1/pages, POST /v1/admin/rebalance,
// the email module's POSTs) present `Authorization: Bearer <token>` when a token is configured
// (compared in constant time; 401 and counted otherwise); reads that reveal the cluster (/metrics,
// GET /v1/admin/rebalance, GET /v1/threads) present the read token or the writers' when a read
// token is configured; status reads (GET /v1/status, GET /v1/groups/{id}, /healthz) and the
// probe stay open. A write from a web page (an Origin header not in allowed_origins) is refused
// 403; a server on loopback answers only requests whose Host names loopback (421).
// Ingest's parsing and the status queries that must wait for a shard (a stale verification) run
// on a pool of their own (`work_threads`), apart from the network threads: a network thread never
// waits for a shard, so a hung shard cannot stall the connections it serves. Probes run on a pool
// of theirs (`probe_threads`), at most `max_probes_in_flight` at once (429 + Retry-After past it),
// with a body of one record (reader.max_line_bytes).
//
// Thread safety: Handle runs on any I/O thread, for several requests at once.
#pragma once

#include <array>
#include <functional>
#include <atomic>
#include <memory>
#include <string>

#include <boost/asio/thread_pool.hpp>

#include "cluster/email_api/email_api.h"
#include "cluster/http/http_access.h"
#include "cluster/http/http_server.h"
#include "cluster/tier1_server/tier1_service.h"

namespace neardup::pb {
class StatusReply;
}

namespace neardup::cluster {

// `reply` as JSON, as ApiJson (Protobuf's printer) gives it (field names as in proto/api.proto,
// every field even when zero, 64-bit integers quoted, doubles exact), without its reflection: the
// status endpoint's whole answer is a few microseconds of work.
std::string StatusReplyJson(const pb::StatusReply& reply);

struct HttpApiOptions {
  HttpAccessOptions access;  // tokens, allowed origins, loopback only
  int work_threads = 2;
  int probe_threads = 1;
  uint32_t max_probes_in_flight = 8;
  uint64_t max_probe_body_bytes = uint64_t{8} << 20;  // one crawl record (reader.max_line_bytes)
  uint32_t retry_after_seconds = 1;
};

class HttpApi {
 public:
  // `service` is not owned and outlives the API.
  HttpApi(Tier1Service* service, HttpApiOptions options);
  // The API's options from a Tier 1 server's configuration (tokens as given: read their files
  // first) and whether its server listens on loopback alone.
  static HttpApiOptions OptionsFrom(const pb::NeardupConfig& config, std::string write_token, std::string read_token,
                                    bool loopback_only);
  // Stop().
  ~HttpApi();
  // Waits for the work in flight on its pool. Call it after the server's Stop and the service's
  // (whose last acknowledgements resume requests on the pool) and before the server is destroyed.
  void Stop();

  boost::asio::awaitable<HttpResponse> Handle(HttpRequest& request);
  HttpHandler Handler() {
    return [this](HttpRequest& r) { return Handle(r); };
  }
  // The verdict on a request's header (access, and the body limit of its route), for the server.
  HeaderVerdict CheckHeader(const HttpRequest& header);
  HttpHeaderCheck HeaderCheck() {
    return [this](const HttpRequest& h) { return CheckHeader(h); };
  }
  // The network's counters go into /metrics too (set once the server is up; may stay null).
  // (Set while the server's threads may already read it: atomic.)
  void set_server(const HttpServer* server) { server_.store(server); }
  // Serves the email endpoints with `email` (not owned; outlives the API). Call before the server
  // starts.
  void set_email(EmailApi* email) { email_ = email; }

  // The endpoints /metrics counts apart.
  enum Endpoint { kPages, kDelete, kStatus, kGroups, kHealth, kMetrics, kEmail, kAdmin, kOther, kEndpoints };

 private:
  boost::asio::awaitable<HttpResponse> Route(HttpRequest& request, Endpoint* endpoint);
  Endpoint EndpointOf(boost::beast::http::verb method, std::string_view path) const;
  HttpResponse StartRebalance(HttpRequest& request);
  boost::asio::awaitable<HttpResponse> Ingest(HttpRequest& request, bool is_delete, const std::string& url);
  boost::asio::awaitable<HttpResponse> Status(HttpRequest& request, const std::string& url);
  boost::asio::awaitable<HttpResponse> Probe(HttpRequest& request);
  // Runs `answer` on the work pool and comes back to the calling coroutine's thread.
  boost::asio::awaitable<StatusOr<PageStatus>> OnPool(std::function<StatusOr<PageStatus>()> answer,
                                                      boost::asio::thread_pool& pool);
  HttpResponse StatusReply(const HttpRequest& request, const std::string& url, const StatusOr<PageStatus>& s);
  HttpResponse Group(const HttpRequest& request, const std::string& id);
  HttpResponse Metrics(const HttpRequest& request);
  boost::asio::awaitable<HttpResponse> ProbeBounded(HttpRequest& request);
  void Observe(Endpoint e, unsigned code, double seconds);

  Tier1Service* const service_;
  const HttpApiOptions o_;
  const HttpAccess access_;
  const uint32_t retry_after_;
  std::atomic<const HttpServer*> server_{nullptr};
  EmailApi* email_ = nullptr;
  std::unique_ptr<boost::asio::thread_pool> work_;
  std::unique_ptr<boost::asio::thread_pool> probes_;
  std::atomic<uint32_t> probes_in_flight_{0};

  // Per endpoint: requests by status class (2xx..5xx), and a latency histogram.
  static constexpr std::array<double, 12> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                       0.05,   0.1,   0.25,   0.5,   1,    5};
  struct Counters {
    std::array<std::atomic<uint64_t>, 4> by_class{};
    std::array<std::atomic<uint64_t>, kBuckets.size() + 1> buckets{};
    std::atomic<uint64_t> count{0}, micros{0};
  };
  std::array<Counters, kEndpoints> counters_;
  std::atomic<uint64_t> unauthorized_{0}, shed_{0}, status_waits_{0}, probes_shed_{0};
  // Completeness of the recent status answers: answers below 1, and their sum.
  std::atomic<uint64_t> partial_answers_{0}, partial_micro_sum_{0};
};

}  // namespace neardup::cluster
