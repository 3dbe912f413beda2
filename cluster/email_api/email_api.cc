#include "cluster/email_api/email_api.h"

#include <algorithm>
#include <limits>
#include <unordered_set>
#include <utility>

#include <boost/asio.hpp>
#include <fmt/format.h>

#include "cluster/http/http_request.h"
#include "common/config.h"
#include "email/domains/domain_records.h"
#include "email/threads/thread_records.h"
#include "proto/api.pb.h"

// g++ 12 at -O1 (the sanitizer builds) inlines a coroutine's frame allocation into its caller:
// Asio allocates the frame through its own operator new and frees it through its own delete, and
// the compiler takes the pair for a mismatch (as in tier2_server.cc). A false positive.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace neardup::cluster {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;

constexpr std::string_view kEmails = "/v1/emails";
constexpr std::string_view kAnnotate = "/v1/emails/annotate";
constexpr std::string_view kTemplates = "/v1/templates/";
constexpr std::string_view kThreads = "/v1/threads";
constexpr std::string_view kDomainEvents = "/v1/domain-events";
constexpr std::string_view kClassify = "/v1/domains/classify";

// A 16-hex-digit template id; false for anything else.
bool ParseHexId(std::string_view s, uint64_t* id) {
  if (s.size() != 16) return false;
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return false;
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  *id = v;
  return true;
}

std::string_view TrimLine(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.remove_suffix(1);
  return line;
}

// Parses every non-blank line of a JSON Lines body with parse(line, line_number, out); the first
// bad line (or one too long, or more than max_records lines) is *error, a reply naming it. `noun`
// names a record in the reply to an empty body.
template <typename Record, typename Parse>
bool ParseBody(const HttpRequest& request, uint64_t max_line_bytes, uint64_t max_records, Parse&& parse,
               std::vector<Record>* out, HttpResponse* error, std::string_view noun = "record") {
  std::string_view body = request.body();
  uint64_t line_no = 0;
  while (!body.empty()) {
    const size_t nl = body.find('\n');
    const std::string_view line = TrimLine(body.substr(0, nl));
    body = nl == std::string_view::npos ? std::string_view() : body.substr(nl + 1);
    ++line_no;
    if (line.empty()) continue;
    if (out->size() == max_records) {
      *error = JsonError(request, 413, fmt::format("line {}: more than {} records in one request", line_no, max_records),
                     line_no);
      return false;
    }
    if (line.size() > max_line_bytes) {
      *error = JsonError(request, 400, fmt::format("line {}: line longer than {} bytes", line_no, max_line_bytes), line_no);
      return false;
    }
    Record r;
    if (Status s = parse(line, line_no, &r); !s.ok()) {
      *error = JsonError(request, 400, fmt::format("line {}: {}", line_no, s.message()), line_no);
      return false;
    }
    out->push_back(std::move(r));
  }
  if (out->empty()) {
    *error = JsonError(request, 400, fmt::format("no {} in the body (JSON Lines: one {} per line)", noun, noun));
    return false;
  }
  return true;
}

std::vector<std::string> SplitComma(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    const size_t c = s.find(',');
    const std::string_view part = s.substr(0, c);
    if (!part.empty()) out.emplace_back(part);
    s = c == std::string_view::npos ? std::string_view() : s.substr(c + 1);
  }
  return out;
}

unsigned HttpCode(const Status& s) { return s.code() == StatusCode::kInvalidArgument ? 400 : 500; }

}  // namespace

EmailApi::EmailApi(EmailApiOptions options) : options_(std::move(options)) {}

EmailApi::~EmailApi() { (void)Stop(); }

StatusOr<std::unique_ptr<EmailApi>> EmailApi::Open(EmailApiOptions options) {
  if (options.store.empty()) return InvalidArgument("email API: no store directory given");
  if (options.max_line_bytes == 0) options.max_line_bytes = ConfigDefaults().reader().max_line_bytes();
  std::unique_ptr<EmailApi> api(new EmailApi(std::move(options)));
  email::InducerOptions io;
  io.config = api->options_.config;
  io.path = api->options_.store;
  ASSIGN_OR_RETURN(api->inducer_, email::Inducer::Open(io));
  api->annotator_ = std::make_unique<email::Annotator>(api->inducer_.get(), /*forward=*/true,
                                                       api->options_.config.snapshot_refresh_ms());
  RETURN_IF_ERROR(api->annotator_->RefreshEvery(api->options_.config.snapshot_refresh_ms()));
  if (!api->options_.threads_store.empty()) {
    email::ThreadWeaverOptions wo;
    wo.path = api->options_.threads_store;
    wo.spam_cap = api->options_.config.thread_spam_cap();
    ASSIGN_OR_RETURN(api->weaver_, email::ThreadWeaver::Open(wo));
  }
  if (!api->options_.domains_store.empty()) {
    email::DomainCountsOptions d;
    d.path = api->options_.domains_store;
    d.healer_sample_rate = api->options_.config.domain_healer_sample_rate();
    ASSIGN_OR_RETURN(api->domains_, email::DomainCounts::Open(d));
  }
  api->work_ = std::make_unique<asio::thread_pool>(static_cast<size_t>(std::max(1, api->options_.work_threads)));
  return api;
}

Status EmailApi::Stop() {
  if (work_ != nullptr) work_->join();
  Status s = inducer_ != nullptr ? inducer_->Drain() : Status::Ok();
  if (domains_ != nullptr) {
    Status d = domains_->DrainHealer();
    if (d.ok()) d = domains_->Sync();  // the healer's last differences
    if (s.ok()) s = d;
  }
  return s;
}

bool EmailApi::Serves(std::string_view path) {
  return path == kEmails || path == kAnnotate || path.rfind(kTemplates, 0) == 0 || path == kThreads ||
         path == kDomainEvents || path == kClassify;
}

HttpAccess::Need EmailApi::NeedOf(http::verb method, std::string_view path) {
  if (method != http::verb::get && method != http::verb::head) return HttpAccess::kWrite;
  if (path == kThreads || path == kClassify) return HttpAccess::kRead;
  return HttpAccess::kOpen;
}

HeaderVerdict EmailApi::CheckHeader(const HttpAccess& access, const HttpRequest& header) const {
  const std::string_view target(header.target().data(), header.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  const http::verb m = header.method();
  const bool get = m == http::verb::get || m == http::verb::head;
  return access.Check(header, NeedOf(m, path), get ? 64 << 10 : 0, !get);
}

asio::awaitable<HttpResponse> EmailApi::OnPool(std::function<HttpResponse()> fn) {
  co_return co_await asio::co_spawn(
      *work_, [fn = std::move(fn)]() -> asio::awaitable<HttpResponse> { co_return fn(); }, asio::use_awaitable);
}

asio::awaitable<HttpResponse> EmailApi::Handle(HttpRequest& request) {
  const std::string_view target(request.target().data(), request.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  const http::verb m = request.method();
  if (path == kEmails || path == kAnnotate) {
    if (m != http::verb::post) co_return JsonError(request, 405, "use POST");
    if (!BearerAuthorized(request, options_.bearer_token)) {
      ++unauthorized_;
      HttpResponse r = JsonError(request, 401, "a bearer token is required to write");
      r.set(http::field::www_authenticate, "Bearer");
      co_return r;
    }
    const bool ingest = path == kEmails;
    // Parsing, features and matching are work: off the network threads.
    co_return co_await asio::co_spawn(
        *work_,
        [this, &request, ingest]() -> asio::awaitable<HttpResponse> {
          co_return ingest ? Ingest(request) : Annotate(request);
        },
        asio::use_awaitable);
  }
  if (path.rfind(kTemplates, 0) == 0) {
    if (m != http::verb::get) co_return JsonError(request, 405, "use GET");
    co_return Template(request, path.substr(kTemplates.size()));
  }
  const bool threads = path == kThreads && weaver_ != nullptr;
  const bool domains = (path == kDomainEvents || path == kClassify) && domains_ != nullptr;
  if (threads || domains) {
    const bool write = path == kDomainEvents || (threads && m == http::verb::post);
    if (path == kDomainEvents && m != http::verb::post) co_return JsonError(request, 405, "use POST");
    if (path == kClassify && m != http::verb::get) co_return JsonError(request, 405, "use GET");
    if (threads && m != http::verb::post && m != http::verb::get) co_return JsonError(request, 405, "use POST or GET");
    if (write && !BearerAuthorized(request, options_.bearer_token)) {
      ++unauthorized_;
      HttpResponse r = JsonError(request, 401, "a bearer token is required to write");
      r.set(http::field::www_authenticate, "Bearer");
      co_return r;
    }
    // Store reads and writes (and their fsyncs): off the network threads.
    if (path == kThreads) {
      if (write) co_return co_await OnPool([this, &request] { return AddThreads(request); });
      co_return co_await OnPool([this, &request] { return LookupThread(request); });
    }
    if (path == kDomainEvents) co_return co_await OnPool([this, &request] { return ApplyDomainRecords(request); });
    co_return co_await OnPool([this, &request] { return Classify(request); });
  }
  co_return JsonError(request, 404, "no such endpoint: " + std::string(path));
}

HttpResponse EmailApi::Ingest(const HttpRequest& request) {
  // Every line is checked before any is offered: a bad request offers nothing.
  std::vector<email::EmailRecord> records;
  HttpResponse error;
  auto parse = [](std::string_view line, uint64_t line_no, email::EmailRecord* r) {
    RETURN_IF_ERROR(email::ParseEmailRecord(line, r));
    r->line = line_no;
    return Status::Ok();
  };
  if (!ParseBody(request, options_.max_line_bytes, std::numeric_limits<uint64_t>::max(), parse, &records, &error,
                 "email")) {
    return error;
  }
  uint64_t accepted = 0, dropped = 0;
  for (auto& r : records) {
    if (inducer_->Offer(std::move(r))) ++accepted; else ++dropped;
  }
  offered_ += accepted;
  refused_ += dropped;
  if (accepted == 0) {
    HttpResponse r = JsonError(request, 429, fmt::format("clustering is saturated: {} emails dropped", dropped));
    r.set(http::field::retry_after, std::to_string(options_.retry_after_seconds));
    return r;
  }
  return JsonResponse(request, 202, fmt::format(R"({{"accepted":{},"dropped":{}}})", accepted, dropped));
}

HttpResponse EmailApi::Annotate(const HttpRequest& request) {
  const std::string_view line = TrimLine(request.body());
  if (line.find('\n') != std::string_view::npos) return JsonError(request, 400, "annotate takes one email (one JSON object)");
  email::EmailRecord r;
  if (Status s = email::ParseEmailRecord(line, &r); !s.ok()) return JsonError(request, 400, s.message());
  r.line = 1;
  const std::string id = r.id;
  auto a = annotator_->Annotate(r);
  if (!a.ok()) {
    return JsonError(request, a.status().code() == StatusCode::kInvalidArgument ? 400 : 500, a.status().message());
  }
  ++annotated_;
  if (a->template_id) ++matched_;
  return JsonResponse(request, 200, email::AnnotationJson(id, *a));
}

HttpResponse EmailApi::Template(const HttpRequest& request, std::string_view id_text) {
  uint64_t id = 0;
  if (!ParseHexId(id_text, &id)) return JsonError(request, 400, "a template id is 16 hex digits");
  const auto snap = annotator_->snapshot();
  const pb::EmailTemplate* t = snap != nullptr ? snap->Find(id) : nullptr;
  if (t == nullptr) return JsonError(request, 404, "no template " + std::string(id_text));
  return JsonResponse(request, 200, email::TemplateJson(*t, snap->RowsOf(id)));
}

HttpResponse EmailApi::AddThreads(const HttpRequest& request) {
  std::vector<email::ThreadEmail> emails;
  HttpResponse error;
  auto parse = [](std::string_view line, uint64_t, email::ThreadEmail* e) { return email::ParseThreadEmail(line, e); };
  if (!ParseBody(request, options_.max_line_bytes, options_.max_records, parse, &emails, &error)) return error;
  for (size_t i = 0; i < emails.size(); ++i) {
    if (Status s = weaver_->Add(emails[i]); !s.ok()) {
      // Every line parsed, so a refusal names the email; none is acknowledged (the client sends
      // the request again: adding an email twice changes nothing).
      return JsonError(request, HttpCode(s), fmt::format("email {} of the body: {}", i + 1, s.message()));
    }
  }
  if (Status s = weaver_->Sync(); !s.ok()) return JsonError(request, 500, s.message());
  threads_added_ += emails.size();
  return JsonResponse(request, 200, fmt::format(R"({{"added":{}}})", emails.size()));
}

HttpResponse EmailApi::LookupThread(const HttpRequest& request) {
  const std::string_view target(request.target().data(), request.target().size());
  const std::string gid = QueryParam(target, "gid"), thread = QueryParam(target, "thread");
  if (gid.empty() || thread.empty()) return JsonError(request, 400, "gid and thread are required query parameters");
  std::unordered_set<std::string> team;
  const std::string team_gids = QueryParam(target, "team_gids"), team_name = QueryParam(target, "team");
  for (std::string& g : SplitComma(team_gids)) team.insert(std::move(g));
  if (!team_name.empty()) {
    auto gids = weaver_->TeamGids(team_name);
    if (!gids.ok()) return JsonError(request, 500, gids.status().message());
    team.insert(gids->begin(), gids->end());
  }
  const bool filter = !team_gids.empty() || !team_name.empty();
  auto u = weaver_->Lookup(gid, thread, filter ? &team : nullptr);
  if (!u.ok()) return JsonError(request, HttpCode(u.status()), u.status().message());
  ++thread_lookups_;
  return JsonResponse(request, 200, email::UnifiedThreadJson(gid, thread, *u));
}

HttpResponse EmailApi::ApplyDomainRecords(const HttpRequest& request) {
  std::vector<email::DomainRecord> records;
  HttpResponse error;
  auto parse = [](std::string_view line, uint64_t n, email::DomainRecord* r) {
    r->line = n;
    return email::ParseDomainRecord(line, r);
  };
  if (!ParseBody(request, options_.max_line_bytes, options_.max_records, parse, &records, &error)) return error;
  uint64_t events = 0;
  for (const email::DomainRecord& r : records) events += r.kind == email::DomainRecord::Kind::kEvent;
  {
    std::lock_guard lock(apply_mu_);
    if (Status s = domains_->Apply(records); !s.ok()) return JsonError(request, HttpCode(s), s.message());
    if (Status s = domains_->Sync(); !s.ok()) return JsonError(request, 500, s.message());
  }
  domain_records_ += records.size();
  return JsonResponse(request, 200, fmt::format(R"({{"records":{},"events":{}}})", records.size(), events));
}

HttpResponse EmailApi::Classify(const HttpRequest& request) {
  const std::string_view target(request.target().data(), request.target().size());
  const std::string team = QueryParam(target, "team"), inviter = QueryParam(target, "inviter"),
                    invitee = QueryParam(target, "invitee");
  if (team.empty() || inviter.empty() || invitee.empty()) {
    return JsonError(request, 400, "team, inviter and invitee are required query parameters");
  }
  auto settings = domains_->Team(team);
  if (!settings.ok()) return JsonError(request, 500, settings.status().message());
  auto c = domains_->Classify(*settings, inviter, invitee, options_.config);
  if (!c.ok()) return JsonError(request, HttpCode(c.status()), c.status().message());
  ++classifications_;
  return JsonResponse(request, 200, email::ClassificationJson(team, invitee, *c));
}

void EmailApi::AppendMetrics(std::string* out) const {
  const email::InducerStats s = inducer_->stats();
  const auto snap = annotator_->snapshot();
  auto one = [&](const char* name, const char* type, const char* help, auto value) {
    *out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, value);
  };
  one("neardup_email_offered_total", "counter", "Emails of POST /v1/emails offered to clustering.", offered_.load());
  one("neardup_email_refused_total", "counter", "Emails of POST /v1/emails that clustering's admission control refused.",
      refused_.load());
  one("neardup_email_annotated_total", "counter", "Emails annotated (POST /v1/emails/annotate).", annotated_.load());
  one("neardup_email_matched_total", "counter", "Annotated emails that matched a template.", matched_.load());
  one("neardup_email_unauthorized_total", "counter", "Email writes refused for a missing or wrong bearer token.",
      unauthorized_.load());
  one("neardup_email_processed_total", "counter", "Emails clustered (stage 1).", s.emails);
  one("neardup_email_dropped_total", "counter", "Emails dropped by stage 1's admission control (any source).",
      s.dropped_emails);
  one("neardup_email_formations_total", "counter", "Template formations run.", s.formations);
  one("neardup_email_dropped_formations_total", "counter", "Formations dropped by stage 2's admission control.",
      s.dropped_formations);
  one("neardup_email_templates", "gauge", "Templates in the annotation snapshot (k unique recipients or more).",
      snap != nullptr ? snap->Unique().size() : 0);
  one("neardup_email_snapshot_age_seconds", "gauge", "Age of the annotation snapshot.",
      snap != nullptr ? static_cast<double>(SystemClock()->NowMillis() - snap->built_ms()) / 1000.0 : 0.0);
  one("neardup_email_snapshot_failures_total", "counter", "Snapshot rebuilds that failed (the previous one kept).",
      annotator_->failed_refreshes());
  if (weaver_ != nullptr) {
    one("neardup_email_threads_added_total", "counter", "Emails added to unified threads (POST /v1/threads).",
        threads_added_.load());
    one("neardup_email_thread_lookups_total", "counter", "Unified threads looked up (GET /v1/threads).",
        thread_lookups_.load());
  }
  if (domains_ != nullptr) {
    const email::HealerReport h = domains_->healer_report();
    one("neardup_email_domain_records_total", "counter", "Domain records applied (POST /v1/domain-events).",
        domain_records_.load());
    one("neardup_email_classifications_total", "counter", "Invitees classified (GET /v1/domains/classify).",
        classifications_.load());
    one("neardup_email_domain_keys_healed_total", "counter", "Domain counts the healer corrected.", h.keys_healed);
  }
}

}  // namespace neardup::cluster
