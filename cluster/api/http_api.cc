#include "cluster/api/http_api.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <utility>

#include <boost/asio.hpp>
#include <fmt/format.h>
#include <simdjson.h>

#include "cluster/http/http_request.h"
#include "common/json_write.h"
#include "document/crawl_reader.h"
#include "proto/api.pb.h"

// g++ 12 at -O1 (the sanitizer builds) inlines a coroutine's frame allocation into its caller:
// Asio allocates the frame through its own operator new and frees it through its own delete, and
// the compiler takes the pair for a mismatch (as in tier2_server.cc). A false positive.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace neardup::cluster {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;

// A double as Protobuf's JSON printer writes it: the shortest text that reads back as the same
// value; non-finite values as the strings it uses.
void AppendExactDouble(std::string* out, double v) {
  if (std::isnan(v)) {
    out->append("\"NaN\"");
  } else if (std::isinf(v)) {
    out->append(v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
  } else {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof(buf), v);
    out->append(buf, r.ptr);
  }
}

void AppendQuotedUint(std::string* out, uint64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->push_back('"');
  out->append(buf, r.ptr);
  out->push_back('"');
}

}  // namespace

std::string StatusReplyJson(const pb::StatusReply& r) {
  std::string out;
  out.reserve(180 + r.url().size() + r.winner().size() + r.duplicate_of().size());
  out.append("{\"url\":");
  AppendJsonString(&out, r.url());
  out.append(",\"status\":");
  AppendJsonString(&out, r.status());
  out.append(",\"group\":");
  AppendQuotedUint(&out, r.group());
  out.append(",\"winner\":");
  AppendJsonString(&out, r.winner());
  out.append(",\"similarity_to_winner\":");
  AppendExactDouble(&out, r.similarity_to_winner());
  out.append(r.verified() ? ",\"verified\":true" : ",\"verified\":false");
  out.append(r.redirect() ? ",\"redirect\":true" : ",\"redirect\":false");
  out.append(",\"group_members\":");
  AppendQuotedUint(&out, r.group_members());
  out.append(",\"completeness\":");
  AppendExactDouble(&out, r.completeness());
  out.append(",\"map_version\":");
  AppendQuotedUint(&out, r.map_version());
  out.append(",\"duplicate_of\":");
  AppendJsonString(&out, r.duplicate_of());
  out.append(",\"similarity_to_duplicate_of\":");
  AppendExactDouble(&out, r.similarity_to_duplicate_of());
  out.append(",\"route\":");
  AppendJsonString(&out, r.route());
  out.push_back('}');
  return out;
}

namespace {

// The line number an ingest error names ("line N: ..."), 0 when none.
uint64_t LineOf(const std::string& message) {
  if (message.rfind("line ", 0) != 0) return 0;
  uint64_t n = 0;
  for (size_t i = 5; i < message.size() && message[i] >= '0' && message[i] <= '9'; ++i) n = n * 10 + static_cast<uint64_t>(message[i] - '0');
  return n;
}

// Waits for an ingest's acknowledgement: `start(done)` queues it (or refuses it, returned), and
// `done` comes from the log's thread; the coroutine resumes on its own executor.
template <typename Start>
asio::awaitable<std::pair<Status, uint64_t>> AwaitDurable(Start start) {
  using Result = std::pair<Status, uint64_t>;
  co_return co_await asio::async_initiate<decltype(asio::use_awaitable), void(Result)>(
      [start = std::move(start)](auto handler) mutable {
        auto h = std::make_shared<decltype(handler)>(std::move(handler));
        auto deliver = [h](Result r) {
          auto ex = asio::get_associated_executor(*h);
          asio::post(ex, [h, r = std::move(r)]() mutable { std::move(*h)(std::move(r)); });
        };
        Status refused = start([deliver](const Status& s, uint64_t n) { deliver(Result(s, n)); });
        if (!refused.ok()) deliver(Result(refused, 0));
      },
      asio::use_awaitable);
}

const char* EndpointName(HttpApi::Endpoint e) {
  switch (e) {
    case HttpApi::kPages: return "POST /v1/pages";
    case HttpApi::kDelete: return "DELETE /v1/pages";
    case HttpApi::kStatus: return "GET /v1/status";
    case HttpApi::kGroups: return "GET /v1/groups";
    case HttpApi::kHealth: return "GET /healthz";
    case HttpApi::kMetrics: return "GET /metrics";
    case HttpApi::kEmail: return "email";
    case HttpApi::kAdmin: return "admin";
    default: return "other";
  }
}

}  // namespace

HttpApi::HttpApi(Tier1Service* service, HttpApiOptions options)
    : service_(service),
      o_(std::move(options)),
      access_(o_.access),
      retry_after_(o_.retry_after_seconds),
      work_(std::make_unique<asio::thread_pool>(static_cast<size_t>(std::max(1, o_.work_threads)))),
      probes_(std::make_unique<asio::thread_pool>(static_cast<size_t>(std::max(1, o_.probe_threads)))) {}

HttpApiOptions HttpApi::OptionsFrom(const pb::NeardupConfig& config, std::string write_token, std::string read_token,
                                    bool loopback_only) {
  const pb::Tier1ServerConfig& c = config.tier1_server();
  HttpApiOptions o;
  o.access.write_token = std::move(write_token);
  o.access.read_token = std::move(read_token);
  o.access.allowed_origins.assign(c.allowed_origins().begin(), c.allowed_origins().end());
  o.access.loopback_only = loopback_only;
  o.work_threads = static_cast<int>(c.work_threads());
  o.probe_threads = static_cast<int>(c.probe_threads());
  o.max_probes_in_flight = c.max_probes_in_flight();
  o.max_probe_body_bytes = config.reader().max_line_bytes() + 2;  // the record and its line end
  o.retry_after_seconds = c.retry_after_seconds();
  return o;
}

HttpApi::~HttpApi() { Stop(); }

void HttpApi::Stop() {
  work_->join();
  probes_->join();
}


namespace {

// What a route needs (cluster/http/http_access.h) and the body it may bring.
struct RouteAccess {
  HttpAccess::Need need = HttpAccess::kOpen;
  uint64_t max_body_bytes = 64 << 10;  // a route that reads no body: a little
  bool changes = false;
};

RouteAccess AccessOf(http::verb m, std::string_view path, const HttpApiOptions& o) {
  const bool get = m == http::verb::get || m == http::verb::head;
  RouteAccess a;
  if (path == "/v1/pages") {
    a = {HttpAccess::kWrite, 0, true};  // the server's max_body_bytes
  } else if (path == "/v1/status") {
    if (!get) a = {HttpAccess::kOpen, o.max_probe_body_bytes, false};  // the probe stores nothing
  } else if (path == "/v1/admin/rebalance") {
    a = get ? RouteAccess{HttpAccess::kRead, 64 << 10, false} : RouteAccess{HttpAccess::kWrite, 64 << 10, true};
  } else if (path == "/metrics") {
    a.need = HttpAccess::kRead;
  } else if (EmailApi::Serves(path)) {
    a.need = EmailApi::NeedOf(m, path);
    a.changes = !get && a.need == HttpAccess::kWrite;
    if (!get) a.max_body_bytes = 0;
  }
  return a;
}

}  // namespace

HttpApi::Endpoint HttpApi::EndpointOf(http::verb m, std::string_view path) const {
  if (path == "/v1/pages") return m == http::verb::delete_ ? kDelete : kPages;
  if (path == "/v1/status") return kStatus;
  if (path.rfind("/v1/groups/", 0) == 0) return kGroups;
  if (email_ != nullptr && EmailApi::Serves(path)) return kEmail;
  if (path == "/v1/admin/rebalance") return kAdmin;
  if (path == "/healthz") return kHealth;
  if (path == "/metrics") return kMetrics;
  return kOther;
}

HeaderVerdict HttpApi::CheckHeader(const HttpRequest& header) {
  const std::string_view target(header.target().data(), header.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  const RouteAccess a = AccessOf(header.method(), path, o_);
  HeaderVerdict v = access_.Check(header, a.need, a.max_body_bytes, a.changes);
  if (v.refuse.has_value()) {
    // Counted as the handler would have counted it.
    const Endpoint e = EndpointOf(header.method(), path);
    if (v.refuse->result_int() == 401) {
      ++unauthorized_;
      if (e == kEmail) email_->NoteUnauthorized();
    }
    Observe(e, v.refuse->result_int(), 0);
  }
  return v;
}

asio::awaitable<HttpResponse> HttpApi::Handle(HttpRequest& request) {
  const auto t0 = std::chrono::steady_clock::now();
  Endpoint e = kOther;
  HttpResponse r = co_await Route(request, &e);
  Observe(e, r.result_int(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  co_return r;
}

asio::awaitable<HttpResponse> HttpApi::Route(HttpRequest& request, Endpoint* e) {
  const std::string_view target(request.target().data(), request.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  const http::verb m = request.method();
  // The header's check again: a handler called without the server's (tests, the fuzz target)
  // keeps the same rules, and a server's body limit may have been higher than the route's.
  *e = EndpointOf(m, path);
  const RouteAccess a = AccessOf(m, path, o_);
  if (HeaderVerdict v = access_.Check(request, a.need, a.max_body_bytes, a.changes); v.refuse.has_value()) {
    if (v.refuse->result_int() == 401) {
      ++unauthorized_;
      if (*e == kEmail) email_->NoteUnauthorized();
    }
    co_return std::move(*v.refuse);
  } else if (v.max_body_bytes > 0 && request.body().size() > v.max_body_bytes) {
    co_return JsonError(request, 413, "body over " + std::to_string(v.max_body_bytes) + " bytes");
  }
  if (path == "/v1/pages") {
    *e = m == http::verb::delete_ ? kDelete : kPages;
    if (m != http::verb::post && m != http::verb::delete_) co_return JsonError(request, 405, "use POST or DELETE");
    co_return co_await Ingest(request, m == http::verb::delete_, QueryParam(target, "url"));
  }
  if (path == "/v1/status") {
    *e = kStatus;
    if (m == http::verb::post) co_return co_await ProbeBounded(request);
    if (m != http::verb::get) co_return JsonError(request, 405, "use GET or POST");
    co_return co_await Status(request, QueryParam(target, "url"));
  }
  if (path.rfind("/v1/groups/", 0) == 0) {
    *e = kGroups;
    if (m != http::verb::get) co_return JsonError(request, 405, "use GET");
    co_return Group(request, std::string(path.substr(11)));
  }
  if (email_ != nullptr && EmailApi::Serves(path)) {
    *e = kEmail;
    co_return co_await email_->Handle(request);
  }
  if (path == "/v1/admin/rebalance") {
    *e = kAdmin;
    if (m == http::verb::get) co_return JsonResponse(request, 200, ClusterRebalanceJson(service_->RebalanceState()));
    if (m != http::verb::post) co_return JsonError(request, 405, "use GET or POST");
    co_return StartRebalance(request);
  }
  if (path == "/healthz") {
    *e = kHealth;
    const neardup::Status h = service_->Health();
    if (!h.ok()) co_return JsonError(request, 503, h.message());
    // A new store whose map is not built yet takes ingest (its records answer pending).
    co_return JsonResponse(request, 200, service_->BuildingMap() ? R"({"status":"ok","map":"building"})" : R"({"status":"ok"})");
  }
  if (path == "/metrics") {
    *e = kMetrics;
    co_return Metrics(request);
  }
  co_return JsonError(request, 404, "no such endpoint: " + std::string(path));
}

HttpResponse HttpApi::StartRebalance(HttpRequest& request) {
  ClusterRebalanceRequest q;
  simdjson::dom::parser parser;
  simdjson::dom::object o;
  const std::string& body = request.body();
  if (!body.empty()) {
    if (parser.parse(body).get(o) != simdjson::SUCCESS) {
      return JsonError(request, 400, "POST /v1/admin/rebalance: the body is not a JSON object");
    }
    for (auto [key, value] : o) {
      bool ok = true;
      if (key == "shards") {
        uint64_t v = 0;
        ok = value.get(v) == simdjson::SUCCESS && v >= 1 && v <= 1024;
        q.shards = static_cast<uint32_t>(v);
      } else if (key == "max_move") {
        ok = value.get(q.max_move) == simdjson::SUCCESS;
      } else if (key == "max_mb_per_s") {
        ok = value.get(q.max_mb_per_s) == simdjson::SUCCESS;
      } else if (key == "min_batch_share") {
        ok = value.get(q.min_batch_share) == simdjson::SUCCESS;
      } else if (key == "dry_run") {
        ok = value.get(q.dry_run) == simdjson::SUCCESS;
      } else if (key == "tier2") {
        simdjson::dom::array a;
        ok = value.get(a) == simdjson::SUCCESS;
        for (auto item : a) {
          std::string_view server;
          if (!ok || item.get(server) != simdjson::SUCCESS) {
            ok = false;
            break;
          }
          q.tier2.emplace_back(server);
        }
      } else {
        return JsonError(request, 400, "POST /v1/admin/rebalance: unknown field \"" + std::string(key) + "\"");
      }
      if (!ok) return JsonError(request, 400, "POST /v1/admin/rebalance: bad value for \"" + std::string(key) + "\"");
    }
  }
  const neardup::Status s = service_->StartRebalance(std::move(q));
  if (s.code() == StatusCode::kInvalidArgument) return JsonError(request, 400, s.message());
  if (!s.ok()) return JsonError(request, 409, s.message());
  return JsonResponse(request, 202, ClusterRebalanceJson(service_->RebalanceState()));
}

asio::awaitable<HttpResponse> HttpApi::Ingest(HttpRequest& request, bool is_delete, const std::string& url) {
  if (is_delete && url.empty()) co_return JsonError(request, 400, "DELETE /v1/pages needs ?url=");
  // Parsing a large body is work: off the network threads.
  auto [status, accepted] = co_await asio::co_spawn(
      *work_,
      [this, &request, is_delete, &url]() -> asio::awaitable<std::pair<neardup::Status, uint64_t>> {
        co_return co_await AwaitDurable([&](Tier1Service::IngestDone done) {
          return is_delete ? service_->Delete(url, std::move(done)) : service_->Ingest(request.body(), std::move(done));
        });
      },
      asio::use_awaitable);
  switch (status.code()) {
    case StatusCode::kOk: {
      pb::IngestReply reply;
      reply.set_accepted(accepted);
      co_return JsonResponse(request, 202, ApiJson(reply));
    }
    case StatusCode::kInvalidArgument:
      co_return JsonError(request, 400, status.message(), LineOf(status.message()));
    case StatusCode::kResourceExhausted: {
      ++shed_;
      HttpResponse r = JsonError(request, 429, status.message());
      r.set(http::field::retry_after, std::to_string(retry_after_));
      co_return r;
    }
    default: {
      HttpResponse r = JsonError(request, 503, status.message());
      r.set(http::field::retry_after, std::to_string(retry_after_));
      co_return r;
    }
  }
}

asio::awaitable<HttpResponse> HttpApi::Status(HttpRequest& request, const std::string& url) {
  if (url.empty()) co_return JsonError(request, 400, "GET /v1/status needs ?url=");
  // Most answers need no shard: on this thread. One that must fetch signatures goes to the pool.
  if (std::optional<StatusOr<PageStatus>> now = service_->TryQuery(url); now.has_value()) {
    co_return StatusReply(request, url, *now);
  }
  ++status_waits_;
  co_return StatusReply(request, url, co_await OnPool([this, &url] { return service_->Query(url); }, *work_));
}

asio::awaitable<StatusOr<PageStatus>> HttpApi::OnPool(std::function<StatusOr<PageStatus>()> answer,
                                                     asio::thread_pool& pool) {
  // (co_spawn's result must be default-constructible: a pair, not a StatusOr.)
  auto [status, value] = co_await asio::co_spawn(
      pool,
      [&answer]() -> asio::awaitable<std::pair<neardup::Status, PageStatus>> {
        StatusOr<PageStatus> p = answer();
        if (!p.ok()) co_return std::make_pair(p.status(), PageStatus());
        co_return std::make_pair(neardup::Status::Ok(), *p);
      },
      asio::use_awaitable);
  co_return status.ok() ? StatusOr<PageStatus>(std::move(value)) : StatusOr<PageStatus>(status);
}

asio::awaitable<HttpResponse> HttpApi::ProbeBounded(HttpRequest& request) {
  // Signing and comparing are work: on the probes' pool, at most max_probes_in_flight at once.
  if (probes_in_flight_.fetch_add(1) >= o_.max_probes_in_flight) {
    --probes_in_flight_;
    ++probes_shed_;
    HttpResponse r = JsonError(request, 429, "too many probes in flight (tier1_server.max_probes_in_flight)");
    r.set(http::field::retry_after, std::to_string(retry_after_));
    co_return r;
  }
  struct Release {
    std::atomic<uint32_t>& n;
    ~Release() { --n; }
  } release{probes_in_flight_};
  co_return co_await Probe(request);
}

asio::awaitable<HttpResponse> HttpApi::Probe(HttpRequest& request) {
  // Signing and comparing are work: off the network threads.
  const StatusOr<PageStatus> s = co_await OnPool([this, &request] { return service_->Probe(request.body()); }, *probes_);
  std::string url;
  if (!s.ok()) co_return StatusReply(request, url, s);
  CrawlRecord r;
  std::string_view line = request.body();
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (ParseCrawlRecord(line, &r).ok()) url = r.url;
  co_return StatusReply(request, url, s);
}

HttpResponse HttpApi::StatusReply(const HttpRequest& request, const std::string& url, const StatusOr<PageStatus>& s) {
  if (!s.ok()) return JsonError(request, s.status().code() == StatusCode::kInvalidArgument ? 400 : 500, s.status().message());
  const tier1::StatusAnswer& a = s->answer;
  pb::StatusReply r;
  r.set_url(url);
  r.set_status(tier1::StatusName(a.status));
  r.set_group(a.group);
  r.set_winner(a.winner_url);
  r.set_similarity_to_winner(a.verified && !a.redirect ? a.similarity_to_winner : 0);
  r.set_verified(a.verified);
  r.set_duplicate_of(a.duplicate_of);
  r.set_similarity_to_duplicate_of(a.redirect ? 0 : a.similarity_to_duplicate_of);
  r.set_redirect(a.redirect);
  r.set_group_members(a.group_members);
  r.set_completeness(s->completeness);
  r.set_map_version(s->map_generation);
  if (a.route) r.set_route(tier1::ClassificationName(*a.route));
  if (s->completeness < 1) {
    ++partial_answers_;
    partial_micro_sum_ += static_cast<uint64_t>(s->completeness * 1e6);
  }
  return JsonResponse(request, 200, StatusReplyJson(r));
}

HttpResponse HttpApi::Group(const HttpRequest& request, const std::string& id) {
  const StatusOr<uint64_t> g = ParseDecimalId(id, "a group id");
  if (!g.ok()) return JsonError(request, 400, g.status().message());
  StatusOr<GroupView> v = service_->Group(*g);
  if (!v.ok()) return JsonError(request, v.status().code() == StatusCode::kNotFound ? 404 : 500, v.status().message());
  pb::GroupReply r;
  r.set_id(v->id);
  r.set_winner(v->winner);
  for (const auto& [market, url] : v->market_winners) {
    auto* mw = r.add_market_winners();
    mw->set_market(market);
    mw->set_url(url);
  }
  for (const auto& m : v->members) r.add_members(m);
  r.set_rejections(v->rejections);
  return JsonResponse(request, 200, ApiJson(r));
}

void HttpApi::Observe(Endpoint e, unsigned code, double seconds) {
  Counters& c = counters_[e];
  const size_t cls = code >= 200 && code < 600 ? code / 100 - 2 : 3;
  ++c.by_class[cls];
  size_t b = 0;
  while (b < kBuckets.size() && seconds > kBuckets[b]) ++b;
  ++c.buckets[b];
  ++c.count;
  c.micros += static_cast<uint64_t>(seconds * 1e6);
}

HttpResponse HttpApi::Metrics(const HttpRequest& request) {
  std::string o;
  auto metric = [&](const char* name, const char* type, const char* help) {
    o += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  metric("neardup_http_requests_total", "counter", "HTTP requests answered, by endpoint and status class.");
  static const char* kClass[] = {"2xx", "3xx", "4xx", "5xx"};
  for (int e = 0; e < kEndpoints; ++e) {
    for (size_t k = 0; k < 4; ++k) {
      o += fmt::format("neardup_http_requests_total{{endpoint=\"{}\",code=\"{}\"}} {}\n", EndpointName(Endpoint(e)),
                       kClass[k], counters_[e].by_class[k].load());
    }
  }
  metric("neardup_http_request_seconds", "histogram", "Time to answer an HTTP request, by endpoint.");
  for (int e = 0; e < kEndpoints; ++e) {
    const Counters& c = counters_[e];
    uint64_t cum = 0;
    for (size_t b = 0; b <= kBuckets.size(); ++b) {
      cum += c.buckets[b].load();
      const std::string le = b < kBuckets.size() ? fmt::format("{}", kBuckets[b]) : "+Inf";
      o += fmt::format("neardup_http_request_seconds_bucket{{endpoint=\"{}\",le=\"{}\"}} {}\n", EndpointName(Endpoint(e)), le, cum);
    }
    o += fmt::format("neardup_http_request_seconds_sum{{endpoint=\"{}\"}} {}\n", EndpointName(Endpoint(e)),
                     static_cast<double>(c.micros.load()) / 1e6);
    o += fmt::format("neardup_http_request_seconds_count{{endpoint=\"{}\"}} {}\n", EndpointName(Endpoint(e)), cum);
  }
  const Tier1ServiceStats s = service_->Stats();
  const IngestLog::Stats ls = service_->LogStats();
  auto one = [&](const char* name, const char* type, const char* help, auto value) {
    metric(name, type, help);
    o += fmt::format("{} {}\n", name, value);
  };
  one("neardup_unauthorized_total", "counter", "Write requests refused for a missing or wrong bearer token.", unauthorized_.load());
  one("neardup_shed_total", "counter", "Ingest requests answered 429 (backpressure).", shed_.load());
  one("neardup_probes_shed_total", "counter", "Probes answered 429 (max_probes_in_flight).", probes_shed_.load());
  one("neardup_access_refusals_total", "counter",
      "Requests refused by access rules: a token missing or wrong, a web page's origin, a Host not loopback.",
      access_.refusals());
  one("neardup_status_shard_waits_total", "counter",
      "Status queries answered off the network threads: their verification needed signatures from a shard.",
      status_waits_.load());
  one("neardup_ingest_records_total", "counter", "Records accepted into the ingest log.", ls.records);
  one("neardup_ingest_syncs_total", "counter", "Group commits of the ingest log (one fdatasync each).", ls.syncs);
  one("neardup_ingest_log_bytes", "gauge", "Durable bytes of the ingest log.", s.log_bytes);
  one("neardup_ingest_unsynced_bytes", "gauge", "Accepted bytes waiting to be made durable (queue depth).", s.unsynced_bytes);
  one("neardup_ingest_backlog_bytes", "gauge", "Durable bytes the batch loop has not committed yet (queue depth).",
      s.log_bytes > s.committed_bytes ? s.log_bytes - s.committed_bytes : 0);
  one("neardup_pending_pages", "gauge", "Pages accepted whose batch has not committed.", s.pending_urls);
  one("neardup_batches_total", "counter", "Batches committed.", s.batches);
  one("neardup_loop_restarts_total", "counter", "Batch loop runs that failed and were started again.", s.failed_runs);
  one("neardup_loop_running", "gauge", "1 while the batch loop's run is open (its shards answer).", s.loop_running ? 1 : 0);
  one("neardup_incomplete_batches_total", "counter", "Batches whose Tier 2 comparison a shard did not answer.", s.incomplete_batches);
  one("neardup_last_completeness", "gauge", "Completeness of the last partial comparison (1: none since the last commit).", s.last_completeness);
  one("neardup_partial_answers_total", "counter", "Status answers with completeness below 1.", partial_answers_.load());
  one("neardup_partial_answers_completeness_total", "counter", "Sum of the completeness of those answers.",
      static_cast<double>(partial_micro_sum_.load()) / 1e6);
  const pipeline::PipelineSummary& t = s.totals;
  one("neardup_records_total", "counter", "Records of the committed batches.", t.records);
  one("neardup_pages", "gauge", "Pages in the group store at the last run's end.", t.pages);
  one("neardup_groups", "gauge", "Groups in the group store at the last run's end.", t.groups);
  one("neardup_changed_pages_total", "counter", "Recrawls with changed content (committed batches).", t.changed);
  one("neardup_fast_path_pages_total", "counter", "Of those, pages Tier 1 kept in their group without Tier 2.", t.fast_path);
  one("neardup_fast_path_share", "gauge", "Share of changed pages Tier 1 kept without Tier 2 (committed batches).", t.fast_path_share());
  one("neardup_tier2_comparisons_total", "counter", "(page, shard) comparisons sent to Tier 2 (committed batches).", t.tier2_sends);
  one("neardup_verifications_total", "counter", "Losers verified against their winner (the store's life).", t.verifications);
  one("neardup_rejections_total", "counter", "Losers rejected by verification against their winner (the store's life).", t.rejections);
  one("neardup_repairs_total", "counter", "Groups repaired (committed batches).", t.repairs);
  one("neardup_rebalance_running", "gauge", "1 while a rebalance of the Tier 2 shards runs (the batch loop paused for it).",
      service_->RebalanceState().state == ClusterRebalanceState::kRunning ? 1 : 0);
  // Per shard, as the batch loop last saw it (a scrape never waits for a shard).
  const std::vector<ShardState> shards = service_->Shards();
  if (!shards.empty()) {
    auto per_shard = [&](const char* name, const char* type, const char* help, auto value_of) {
      metric(name, type, help);
      for (const ShardState& sh : shards) {
        o += fmt::format("{}{{shard=\"{}\",server=\"{}\"}} {}\n", name, sh.shard,
                         sh.server.empty() ? "local" : sh.server, value_of(sh));
      }
    };
    per_shard("neardup_shard_up", "gauge", "1 when the shard's last call succeeded.",
              [](const ShardState& sh) { return sh.up ? 1 : 0; });
    per_shard("neardup_shard_resident_pages", "gauge", "Pages the shard holds, as it last said.",
              [](const ShardState& sh) { return sh.resident_pages; });
    per_shard("neardup_shard_calls_total", "counter", "Calls the batch loop and status queries made to the shard.",
              [](const ShardState& sh) { return sh.calls; });
    per_shard("neardup_shard_call_failures_total", "counter", "Calls to the shard that failed (down, past the deadline, an error).",
              [](const ShardState& sh) { return sh.failures; });
    per_shard("neardup_shard_last_success_timestamp_seconds", "gauge", "When the shard last answered (Unix time; 0: never).",
              [](const ShardState& sh) { return fmt::format("{:.3f}", sh.last_success_unix); });
    one("neardup_shard_imbalance", "gauge", "Max over mean of the shards' resident pages (1: balanced).", ResidentImbalance(shards));
  }
  if (const HttpServer* server = server_.load(); server != nullptr) {
    const HttpServerStats h = server->stats();
    one("neardup_http_connections_open", "gauge", "Open HTTP connections.", h.open_connections);
    one("neardup_http_bad_requests_total", "counter", "Malformed, oversized or timed-out HTTP requests.", h.bad_requests);
    one("neardup_http_refused_connections_total", "counter", "Connections refused past max_connections.", h.refused_connections);
    one("neardup_http_handler_errors_total", "counter", "Requests whose handler failed unexpectedly (answered 500).", h.handler_errors);
    one("neardup_http_tls_handshake_failures_total", "counter",
        "HTTPS connections that did not complete the TLS handshake (a client not trusting the certificate, plain HTTP, "
        "none in time).",
        h.tls_failures);
  }
  if (email_ != nullptr) email_->AppendMetrics(&o);
  HttpResponse r = JsonResponse(request, 200, std::move(o));
  r.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
  return r;
}

}  // namespace neardup::cluster
