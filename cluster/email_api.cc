#include "cluster/email_api.h"

#include <algorithm>
#include <utility>

#include <boost/asio.hpp>
#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>

#include "common/config.h"
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

HttpResponse Error(const HttpRequest& request, unsigned code, const std::string& what, uint64_t line = 0) {
  pb::ErrorReply e;
  e.set_error(what);
  e.set_line(line);
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(e, &out, o);
  return JsonResponse(request, code, std::move(out));
}

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
  api->work_ = std::make_unique<asio::thread_pool>(static_cast<size_t>(std::max(1, api->options_.work_threads)));
  return api;
}

Status EmailApi::Stop() {
  if (work_ != nullptr) work_->join();
  return inducer_ != nullptr ? inducer_->Drain() : Status::Ok();
}

bool EmailApi::Serves(std::string_view path) {
  return path == kEmails || path == kAnnotate || path.rfind(kTemplates, 0) == 0;
}

asio::awaitable<HttpResponse> EmailApi::Handle(HttpRequest& request) {
  const std::string_view target(request.target().data(), request.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  const http::verb m = request.method();
  if (path == kEmails || path == kAnnotate) {
    if (m != http::verb::post) co_return Error(request, 405, "use POST");
    if (!BearerAuthorized(request, options_.bearer_token)) {
      ++unauthorized_;
      HttpResponse r = Error(request, 401, "a bearer token is required to write");
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
    if (m != http::verb::get) co_return Error(request, 405, "use GET");
    co_return Template(request, path.substr(kTemplates.size()));
  }
  co_return Error(request, 404, "no such endpoint: " + std::string(path));
}

HttpResponse EmailApi::Ingest(const HttpRequest& request) {
  // Every line is checked before any is offered: a bad request offers nothing.
  std::vector<email::EmailRecord> records;
  std::string_view body = request.body();
  uint64_t line_no = 0;
  while (!body.empty()) {
    const size_t nl = body.find('\n');
    const std::string_view line = TrimLine(body.substr(0, nl));
    body = nl == std::string_view::npos ? std::string_view() : body.substr(nl + 1);
    ++line_no;
    if (line.empty()) continue;
    if (line.size() > options_.max_line_bytes) {
      return Error(request, 400,
                   fmt::format("line {}: line longer than {} bytes", line_no, options_.max_line_bytes), line_no);
    }
    email::EmailRecord r;
    if (Status s = email::ParseEmailRecord(line, &r); !s.ok()) {
      return Error(request, 400, fmt::format("line {}: {}", line_no, s.message()), line_no);
    }
    r.line = line_no;
    records.push_back(std::move(r));
  }
  if (records.empty()) return Error(request, 400, "no email in the body (JSON Lines: one email per line)");
  uint64_t accepted = 0, dropped = 0;
  for (auto& r : records) {
    if (inducer_->Offer(std::move(r))) ++accepted; else ++dropped;
  }
  offered_ += accepted;
  refused_ += dropped;
  if (accepted == 0) {
    HttpResponse r = Error(request, 429, fmt::format("clustering is saturated: {} emails dropped", dropped));
    r.set(http::field::retry_after, std::to_string(options_.retry_after_seconds));
    return r;
  }
  return JsonResponse(request, 202, fmt::format(R"({{"accepted":{},"dropped":{}}})", accepted, dropped));
}

HttpResponse EmailApi::Annotate(const HttpRequest& request) {
  const std::string_view line = TrimLine(request.body());
  if (line.find('\n') != std::string_view::npos) return Error(request, 400, "annotate takes one email (one JSON object)");
  email::EmailRecord r;
  if (Status s = email::ParseEmailRecord(line, &r); !s.ok()) return Error(request, 400, s.message());
  r.line = 1;
  const std::string id = r.id;
  auto a = annotator_->Annotate(r);
  if (!a.ok()) {
    return Error(request, a.status().code() == StatusCode::kInvalidArgument ? 400 : 500, a.status().message());
  }
  ++annotated_;
  if (a->template_id) ++matched_;
  return JsonResponse(request, 200, email::AnnotationJson(id, *a));
}

HttpResponse EmailApi::Template(const HttpRequest& request, std::string_view id_text) {
  uint64_t id = 0;
  if (!ParseHexId(id_text, &id)) return Error(request, 400, "a template id is 16 hex digits");
  const auto snap = annotator_->snapshot();
  const pb::EmailTemplate* t = snap != nullptr ? snap->Find(id) : nullptr;
  if (t == nullptr) return Error(request, 404, "no template " + std::string(id_text));
  return JsonResponse(request, 200, email::TemplateJson(*t, snap->RowsOf(id)));
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
}

}  // namespace neardup::cluster
