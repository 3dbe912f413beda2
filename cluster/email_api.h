// EmailApi: the email module's HTTP endpoints (email/: online template induction and annotation),
// served beside the crawlers' API by tier1-server when tier1_server.email_store is set
// (cluster/http_api.h routes them here), or alone by `neardup email serve`.
//
//   POST /v1/emails            JSON Lines emails (email/email_reader.h's fields) -> 202
//                              {"accepted": n, "dropped": d}: each email offered to clustering
//                              (stage 1's admission control drops, and counts, what does not fit);
//                              400 names the first bad line (nothing offered); 429 + Retry-After
//                              when stage 1 refused every email of the request
//   POST /v1/emails/annotate   one email (a JSON object) -> 200 {"id", "template": 16 hex digits or
//                              null, "annotations": {aggregator: value}}; the email is forwarded
//                              to clustering fire-and-forget (never waited for)
//   GET  /v1/templates/{id}    -> 200 the template (email/annotator.h's TemplateJson); 400 for an
//                              id that is not 16 hex digits; 404 for one the snapshot lacks
// Anything else gets 404 (405 for a wrong method). Templates come from the annotator's snapshot,
// which a thread of its own rebuilds every email.snapshot_refresh_ms; only templates with k unique
// recipients are ever in it. Both POSTs need the bearer token when one is configured (401
// otherwise). Parsing, features and matching run on a pool of the API's own, never on a network
// thread. Errors name the line and field, never an email's content.
//
//   ASSIGN_OR_RETURN(auto api, EmailApi::Open({.config = c.email(), .store = dir}));
//   if (EmailApi::Serves(path)) co_return co_await api->Handle(request);
//   ...
//   api->Stop();   // after the HTTP server's Stop: drains clustering
//
// Thread safety: Handle may run on any thread, for many requests at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>

#include "cluster/http_server.h"
#include "common/status.h"
#include "email/annotator.h"
#include "email/inducer.h"
#include "proto/config.pb.h"

namespace neardup::cluster {

struct EmailApiOptions {
  pb::EmailConfig config;        // defaults filled in
  std::string store;             // the cluster store's directory (created when missing)
  std::string bearer_token;      // empty: writes need none
  int work_threads = 2;
  uint32_t retry_after_seconds = 1;
  uint64_t max_line_bytes = 0;   // 0: the reader's default
};

class EmailApi {
 public:
  // Opens the inducer on `store` and builds the first template snapshot. InvalidArgument for a bad
  // configuration; the store's errors otherwise.
  static StatusOr<std::unique_ptr<EmailApi>> Open(EmailApiOptions options);
  ~EmailApi();

  // Whether `path` (without its query) is one of these endpoints.
  static bool Serves(std::string_view path);
  boost::asio::awaitable<HttpResponse> Handle(HttpRequest& request);
  // Waits for the requests on its pool and for clustering to go idle; returns the first error a
  // clustering stage met. Call after the HTTP server's Stop.
  Status Stop();

  // Prometheus text of the clustering's counters (neardup_email_*), for /metrics.
  void AppendMetrics(std::string* out) const;
  email::Inducer* inducer() { return inducer_.get(); }
  email::Annotator* annotator() { return annotator_.get(); }

 private:
  explicit EmailApi(EmailApiOptions options);
  HttpResponse Ingest(const HttpRequest& request);
  HttpResponse Annotate(const HttpRequest& request);
  HttpResponse Template(const HttpRequest& request, std::string_view id);

  EmailApiOptions options_;
  std::unique_ptr<email::Inducer> inducer_;
  std::unique_ptr<email::Annotator> annotator_;
  std::unique_ptr<boost::asio::thread_pool> work_;
  std::atomic<uint64_t> offered_{0}, refused_{0}, annotated_{0}, matched_{0}, unauthorized_{0};
};

}  // namespace neardup::cluster
