// EmailApi: the email module's HTTP endpoints (email/: online template induction and annotation),
// served beside the crawlers' API by tier1-server when tier1_server.email_store is set
// (cluster/api/http_api.h routes them here), or alone by `neardup email serve`.
//
//   POST /v1/emails            JSON Lines emails (email/templates/email_reader.h's fields) -> 202
//                              {"accepted": n, "dropped": d}: each email offered to clustering
//                              (stage 1's admission control drops, and counts, what does not fit);
//                              400 names the first bad line (nothing offered); 429 + Retry-After
//                              when stage 1 refused every email of the request
//   POST /v1/emails/annotate   one email (a JSON object) -> 200 {"id", "template": 16 hex digits or
//                              null, "annotations": {aggregator: value}}; the email is forwarded
//                              to clustering fire-and-forget (never waited for)
//   GET  /v1/templates/{id}    -> 200 the template (email/templates/annotator.h's TemplateJson); 400 for an
//                              id that is not 16 hex digits; 404 for one the snapshot lacks
// With a threads store (unified threads, email/threads/thread_weaver.h):
//   POST /v1/threads           JSON Lines emails of mailboxes (email/threads/thread_records.h: gid, thread,
//                              message_id, team) -> 200 {"added": n}: every email added and
//                              acknowledged (one fsync) before the reply; 400 names the first bad
//                              line (nothing added); 413 past max_records lines
//   GET  /v1/threads?gid=G&thread=T[&team_gids=a,b,c][&team=T]
//                              -> 200 the unified thread (email/threads/thread_records.h's UnifiedThreadJson),
//                              filtered to the mailboxes given or recorded for the team; 400 for a
//                              missing or bad gid or thread
// With a domains store (domain counts, email/domains/domain_counts.h):
//   POST /v1/domain-events     JSON Lines user rows, events and team settings -> 200 {"records": n,
//                              "events": e}: applied as one atomic write and acknowledged (one
//                              fsync); 400 names the first bad line (nothing applied); 413 as above
//   GET  /v1/domains/classify?team=T&inviter=x@a.com&invitee=y@b.com
//                              -> 200 {"class": "internal|external", "reason", counts...}; 400 for a
//                              missing parameter or an address without a domain
// Without the store they need, these paths get 404 like any other unknown one.
// Anything else gets 404 (405 for a wrong method). Templates come from the annotator's snapshot,
// which a thread of its own rebuilds every email.snapshot_refresh_ms; only templates with k unique
// recipients are ever in it. Every POST needs the bearer token when one is configured (401
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
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>

#include "cluster/http/http_access.h"
#include "cluster/http/http_server.h"
#include "common/status.h"
#include "email/templates/annotator.h"
#include "email/domains/domain_counts.h"
#include "email/templates/inducer.h"
#include "email/threads/thread_weaver.h"
#include "proto/config.pb.h"

namespace neardup::cluster {

struct EmailApiOptions {
  pb::EmailConfig config;        // defaults filled in
  std::string store;             // the cluster store's directory (created when missing)
  std::string bearer_token;      // empty: writes need none
  int work_threads = 2;
  uint32_t retry_after_seconds = 1;
  uint64_t max_line_bytes = 0;   // 0: the reader's default
  std::string threads_store{};   // unified threads' store directory; empty: no /v1/threads
  std::string domains_store{};   // domain counts' store directory; empty: no /v1/domain-events, /v1/domains/...
  uint64_t max_records = 100'000;  // lines of one POST /v1/threads or /v1/domain-events (413 past it)
};

class EmailApi {
 public:
  // Opens the inducer on `store` and builds the first template snapshot. InvalidArgument for a bad
  // configuration; the store's errors otherwise.
  static StatusOr<std::unique_ptr<EmailApi>> Open(EmailApiOptions options);
  ~EmailApi();

  // Whether `path` (without its query) is one of these endpoints.
  static bool Serves(std::string_view path);
  // What a request to one of them needs (cluster/http/http_access.h): the POSTs write; the unified
  // threads and the domain classification reveal users' mail (kRead); templates are open.
  static HttpAccess::Need NeedOf(boost::beast::http::verb method, std::string_view path);
  // The server's header check for these endpoints served alone (`neardup email serve`).
  HeaderVerdict CheckHeader(const HttpAccess& access, const HttpRequest& header) const;
  boost::asio::awaitable<HttpResponse> Handle(HttpRequest& request);
  // Waits for the requests on its pool and for clustering to go idle; returns the first error a
  // clustering stage met. Call after the HTTP server's Stop.
  Status Stop();

  // Counts a write refused for its token before it reached Handle (the server's header check).
  void NoteUnauthorized() { ++unauthorized_; }
  // Prometheus text of the clustering's counters (neardup_email_*), for /metrics.
  void AppendMetrics(std::string* out) const;
  email::Inducer* inducer() { return inducer_.get(); }
  email::ThreadWeaver* weaver() { return weaver_.get(); }
  email::DomainCounts* domains() { return domains_.get(); }
  email::Annotator* annotator() { return annotator_.get(); }

 private:
  explicit EmailApi(EmailApiOptions options);
  HttpResponse Ingest(const HttpRequest& request);
  HttpResponse Annotate(const HttpRequest& request);
  HttpResponse Template(const HttpRequest& request, std::string_view id);
  HttpResponse AddThreads(const HttpRequest& request);
  HttpResponse LookupThread(const HttpRequest& request);
  HttpResponse ApplyDomainRecords(const HttpRequest& request);
  HttpResponse Classify(const HttpRequest& request);
  // Runs fn on the work pool (never a network thread).
  boost::asio::awaitable<HttpResponse> OnPool(std::function<HttpResponse()> fn);

  EmailApiOptions options_;
  std::unique_ptr<email::Inducer> inducer_;
  std::unique_ptr<email::Annotator> annotator_;
  std::unique_ptr<email::ThreadWeaver> weaver_;   // options_.threads_store
  std::unique_ptr<email::DomainCounts> domains_;  // options_.domains_store
  std::mutex apply_mu_;  // DomainCounts::Apply: one at a time
  std::unique_ptr<boost::asio::thread_pool> work_;
  std::atomic<uint64_t> offered_{0}, refused_{0}, annotated_{0}, matched_{0}, unauthorized_{0};
  std::atomic<uint64_t> threads_added_{0}, thread_lookups_{0}, domain_records_{0}, classifications_{0};
};

}  // namespace neardup::cluster
