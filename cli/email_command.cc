// neardup email induce | annotate | eval: online template induction over a file of emails
// (email/templates/induction.h, email/templates/annotator.h).
//
//   neardup email induce --input emails.jsonl [--k 10] [--mode verified|paper] [--config c.textproto]
//                        --out templates.jsonl --assignments assignments.jsonl [--store DIR]
//   neardup email annotate --input emails.jsonl --store DIR [--config c.textproto]
//   neardup email eval --input emails.jsonl [--k 10] [--config c.textproto]
//   neardup email serve --store DIR [--config c.textproto] [--listen 127.0.0.1:8090]
//                       [--bearer-token-file F] [--port-file F]
//     the email endpoints alone (cluster/email_api/email_api.h), until SIGINT or SIGTERM; tier1-server serves
//     them beside the crawlers' API when tier1_server.email_store is set
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "cluster/http/bearer_token.h"
#include "cluster/email_api/email_api.h"
#include "cluster/http/http_server.h"
#include "cluster/http/net.h"
#include "cluster/http/tls.h"
#include "common/config.h"
#include "common/json_write.h"
#include "common/progress.h"
#include "email/templates/annotator.h"
#include "email/templates/induction.h"

namespace neardup::cli {
namespace {

struct EmailArgs {
  std::string input, config, out, assignments, store, mode;
  std::string listen = "127.0.0.1:8090", token_file, port_file, threads_store, domains_store, tls_dir;
  std::optional<uint32_t> k;
  double batch_sample = 0.005;
};

StatusOr<pb::NeardupConfig> LoadEmailConfig(const EmailArgs& a) {
  pb::NeardupConfig c = DefaultConfig();
  if (!a.config.empty()) {
    ASSIGN_OR_RETURN(c, LoadConfig(a.config));
  }
  if (a.k) {
    if (auto rule = ConfigRangeError("email.k", *a.k); !rule.empty()) return InvalidArgument("--k " + rule);
    c.mutable_email()->set_k(*a.k);
  }
  if (!a.mode.empty()) {
    RETURN_IF_ERROR(email::ParseFingerprintMode(a.mode).status());
    c.mutable_email()->set_mode(a.mode);
  }
  return c;
}

// A store directory of this run's own, removed at the end, when none is given.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& given) {
    if (!given.empty()) {
      path_ = given;
      return;
    }
    path_ = (std::filesystem::temp_directory_path() / ("neardup-email-" + std::to_string(::getpid()) + "-" +
                                                       std::to_string(counter_++)))
                .string();
    std::filesystem::remove_all(path_);
    owned_ = true;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (owned_) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
  bool owned_ = false;
};

int Fail(const Status& s) {
  spdlog::error("email: {}", s.message());
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

int Induce(const EmailArgs& a) {
  auto cfg = LoadEmailConfig(a);
  if (!cfg.ok()) return Fail(cfg.status());
  ScratchDir store(a.store);
  email::EmailReaderOptions ro;
  ro.max_line_bytes = cfg->reader().max_line_bytes();
  auto r = email::InduceFile(a.input, cfg->email(), store.path(), ro);
  if (!r.ok()) return Fail(r.status());
  if (Status s = email::WriteTemplatesJsonl(a.out, *r->snapshot); !s.ok()) return Fail(s);
  if (Status s = email::WriteAssignmentsJsonl(a.assignments, *r); !s.ok()) return Fail(s);
  uint64_t assigned = 0;
  for (const auto& x : r->assignments) assigned += x.has_value();
  const auto& st = r->stats;
  std::printf("email induce (%s, k %u): %zu templates, %llu of %zu emails assigned, %.0f emails/s; %llu formations "
              "(%llu again), %llu stored, %llu row-full, %llu cache hits, %llu dropped\n",
              cfg->email().mode().c_str(), cfg->email().k(), r->snapshot->Unique().size(),
              static_cast<unsigned long long>(assigned), r->ids.size(), r->ids.size() / std::max(r->seconds, 1e-9),
              static_cast<unsigned long long>(st.formations), static_cast<unsigned long long>(st.reinductions),
              static_cast<unsigned long long>(st.stored), static_cast<unsigned long long>(st.row_full),
              static_cast<unsigned long long>(st.cache_hits),
              static_cast<unsigned long long>(st.dropped_emails + st.dropped_formations));
  return 0;
}

int Annotate(const EmailArgs& a) {
  auto cfg = LoadEmailConfig(a);
  if (!cfg.ok()) return Fail(cfg.status());
  if (!std::filesystem::exists(a.store)) return Fail(InvalidArgument("--store " + a.store + " does not exist (run email induce --store first)"));
  // Event time, as induce keeps it: each email's sent_at moves the store's clock (TTLs and the
  // snapshot's refresh follow the stream, not the wall clock of the replay).
  ManualClock clock(0);
  email::InducerOptions o;
  o.config = cfg->email();
  o.path = a.store;
  o.clock = &clock;
  auto inducer = email::Inducer::Open(o);
  if (!inducer.ok()) return Fail(inducer.status());
  email::EmailReaderOptions ro;
  ro.max_line_bytes = cfg->reader().max_line_bytes();
  auto reader = email::EmailReader::Open(a.input, ro);
  if (!reader.ok()) return Fail(reader.status());
  email::Annotator annotator(inducer->get(), /*forward=*/true, cfg->email().snapshot_refresh_ms());
  email::EmailRecord rec;
  std::string line;
  uint64_t n = 0, matched = 0;
  while ((*reader)->Next(&rec)) {
    if (rec.sent_at_ms) clock.Set(std::max(clock.NowMillis(), *rec.sent_at_ms));
    auto ann = annotator.Annotate(rec);
    if (!ann.ok()) return Fail(ann.status());
    ++n;
    if (ann->template_id) ++matched;
    line = email::AnnotationJson(rec.id, *ann);
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stdout);
  }
  if (!(*reader)->status().ok()) return Fail((*reader)->status());
  if (Status s = (*inducer)->Drain(); !s.ok()) return Fail(s);
  spdlog::info("email annotate: {}; {} of {} emails matched a template (snapshot of {} templates)", (*reader)->Summary(),
               matched, n, annotator.snapshot() ? annotator.snapshot()->size() : 0);
  return 0;
}

int Eval(const EmailArgs& a) {
  auto cfg = LoadEmailConfig(a);
  if (!cfg.ok()) return Fail(cfg.status());
  auto labels_by_id = email::ReadLabels(a.input);
  if (!labels_by_id.ok()) return Fail(labels_by_id.status());
  email::EmailReaderOptions ro;
  ro.max_line_bytes = cfg->reader().max_line_bytes();
  std::printf("%-9s %5s %9s %7s %8s %13s %8s %9s %8s\n", "mode", "k", "templates", "purity", "coverage", "fragmentation",
              "personal", "emails/s", "delay");
  struct DelayRow {
    uint32_t k;
    size_t found, labels;
    double emails, hours;
  };
  std::vector<std::pair<std::string, DelayRow>> delay_rows;
  auto labels_total = [](const std::vector<std::string>& l) {
    std::set<std::string> s(l.begin(), l.end());
    s.erase("none");
    return s.size();
  };
  for (const char* mode : {"verified", "paper"}) {
    pb::EmailConfig e = cfg->email();
    e.set_mode(mode);
    e.set_cluster_threads(0);  // deterministic replay
    e.set_formation_threads(0);
    ScratchDir store("");
    auto r = email::InduceFile(a.input, e, store.path(), ro);
    if (!r.ok()) return Fail(r.status());
    std::vector<std::string> labels;
    for (const auto& id : r->ids) {
      auto it = labels_by_id->find(id);
      if (it == labels_by_id->end()) return Fail(InvalidArgument(a.input + ": email " + id + " has no label to score"));
      labels.push_back(it->second);
    }
    auto s = email::Score(r->assignments, labels);
    if (!s.ok()) return Fail(s.status());
    // Median discovery delay over the labels whose template was found: emails and hours.
    std::vector<double> emails_needed, hours;
    for (const auto& d : email::DiscoveryDelays(*r, labels)) {
      if (!d.discovered) continue;
      emails_needed.push_back(static_cast<double>(d.emails_needed));
      hours.push_back(d.seconds / 3600.0);
    }
    auto median = [](std::vector<double> v) {
      if (v.empty()) return 0.0;
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    if (std::string(mode) == "verified") {
      delay_rows.emplace_back("online, every email", DelayRow{e.k(), emails_needed.size(), labels_total(labels),
                                                              median(emails_needed), median(hours)});
      email::BatchOptions bo;
      bo.sample_rate = a.batch_sample;
      ScratchDir batch_dir("");
      auto b = email::BatchDiscoveryDelays(a.input, e, batch_dir.path(), ro, labels, bo);
      if (!b.ok()) return Fail(b.status());
      std::vector<double> be, bh;
      for (const auto& d : b->delays) {
        if (!d.discovered) continue;
        be.push_back(static_cast<double>(d.emails_needed));
        bh.push_back(d.seconds / 3600.0);
      }
      char name[64];
      std::snprintf(name, sizeof name, "batch, daily, %.1f%% sample", 100.0 * a.batch_sample);
      delay_rows.emplace_back(name, DelayRow{b->k, be.size(), b->delays.size(), median(be), median(bh)});
    }
    std::printf("%-9s %5u %9llu %7.4f %8.4f %13.3f %8llu %9.0f %4.0f em/%.1fh\n", mode, e.k(),
                static_cast<unsigned long long>(s->templates), s->purity, s->coverage, s->fragmentation,
                static_cast<unsigned long long>(s->personal_clustered), r->ids.size() / std::max(r->seconds, 1e-9),
                median(emails_needed), median(hours));
  }
  // Template discovery delay, online against a daily batch over a sample (the paper's Table 1).
  std::printf("\n%-34s %5s %11s %13s %12s\n", "discovery", "k", "found", "median emails", "median hours");
  for (const auto& [name, pos] : delay_rows) {
    std::printf("%-34s %5u %5zu of %-3zu %13.0f %12.1f\n", name.c_str(), pos.k, pos.found, pos.labels, pos.emails, pos.hours);
  }
  std::printf("(purity: assigned emails in their template's majority label; coverage: templated emails assigned; "
              "fragmentation: templates per true label; personal: personal emails assigned; delay: median emails and "
              "hours from a template's first email to its formation)\n");
  return 0;
}

int Serve(const EmailArgs& a) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  auto cfg = LoadEmailConfig(a);
  if (!cfg.ok()) return Fail(cfg.status());
  std::string token;
  if (!a.token_file.empty()) {
    auto t = cluster::ReadBearerTokenFile(a.token_file);
    if (!t.ok()) return Fail(InvalidArgument("email serve: " + t.status().message()));
    token = *t;
  }
  std::string host;
  uint16_t port = 0;
  if (Status s = cluster::ParseHostPort(a.listen, &host, &port); !s.ok()) return Fail(s);
  std::shared_ptr<boost::asio::ssl::context> tls;
  if (!a.tls_dir.empty()) {
    auto ctx = cluster::MakeHttpsServerContext(cluster::TlsFiles::InDir(a.tls_dir));
    if (!ctx.ok()) return Fail(InvalidArgument("email serve: --tls-dir: " + ctx.status().message()));
    tls = *ctx;
  }
  if (!cluster::IsLoopbackHost(host) && (token.empty() || tls == nullptr)) {
    return Fail(InvalidArgument("email serve: listening on " + a.listen +
                                " (beyond loopback) needs HTTPS (--tls-dir) and a bearer token (--bearer-token-file)"));
  }
  auto api = cluster::EmailApi::Open({.config = cfg->email(),
                                      .store = a.store,
                                      .bearer_token = token,
                                      .work_threads = 2,
                                      .retry_after_seconds = 1,
                                      .max_line_bytes = cfg->reader().max_line_bytes(),
                                      .threads_store = a.threads_store,
                                      .domains_store = a.domains_store});
  if (!api.ok()) return Fail(api.status());
  cluster::EmailApi* e = api->get();
  cluster::HttpServerOptions ho;
  ho.listen = a.listen;
  ho.tls = tls;
  ho.io_threads = 1;
  // Writes need the token; a web page cannot write; on loopback, only requests addressed to it.
  cluster::HttpAccessOptions ao;
  ao.write_token = token;
  ao.loopback_only = cluster::IsLoopbackHost(host);
  auto access = std::make_shared<cluster::HttpAccess>(ao);
  auto check = [e, access](const cluster::HttpRequest& h) {
    const std::string_view target(h.target().data(), h.target().size());
    const std::string_view path = target.substr(0, target.find('?'));
    if (path == "/healthz" || path == "/metrics") return access->Check(h, cluster::HttpAccess::kOpen, 64 << 10);
    return e->CheckHeader(*access, h);
  };
  auto server = cluster::HttpServer::Start(ho, [e](cluster::HttpRequest& r) -> boost::asio::awaitable<cluster::HttpResponse> {
    const std::string_view target(r.target().data(), r.target().size());
    const std::string_view path = target.substr(0, target.find('?'));
    if (path == "/healthz") co_return cluster::JsonResponse(r, 200, R"({"status":"ok"})");
    if (path == "/metrics") {
      std::string text;
      e->AppendMetrics(&text);
      cluster::HttpResponse m = cluster::JsonResponse(r, 200, std::move(text));
      m.set(boost::beast::http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
      co_return m;
    }
    co_return co_await e->Handle(r);
  }, check);
  if (!server.ok()) return Fail(server.status());
  spdlog::info("email serve: store {}, API on {}://{}:{}/", a.store, tls ? "https" : "http", host, (*server)->port());
  WritePortFile(a.port_file, (*server)->port());
  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("email serve: signal {}: stopping", sig);
  (*server)->Stop();
  if (Status s = e->Stop(); !s.ok()) return Fail(s);
  return 0;
}

}  // namespace

void RegisterEmail(CLI::App& app, int* exit_code) {
  auto* email = app.add_subcommand("email", "Email: templates (Crusher induction, annotation, evaluation), unified threads, domain counts");
  email->require_subcommand(1);
  auto args = std::make_shared<EmailArgs>();
  auto common = [&](CLI::App* cmd) {
    cmd->add_option("--input", args->input, "emails, JSON Lines (id, sender, recipient, subject, sent_at, html)")->required();
    cmd->add_option("--config", args->config, "configuration (configs/email.textproto); defaults otherwise");
    cmd->add_option("--k", args->k, "k-anonymity: unique recipients a template needs (overrides email.k)");
    cmd->add_option("--mode", args->mode, "fingerprint mode: verified (default) or paper (overrides email.mode)");
  };
  auto* induce = email->add_subcommand("induce", "Cluster emails online into templates; write templates and assignments");
  common(induce);
  induce->add_option("--out", args->out, "templates JSON Lines to write")->required();
  induce->add_option("--assignments", args->assignments, "one {id, template} per email to write")->required();
  induce->add_option("--store", args->store, "the cluster store's directory (kept; a scratch one otherwise)");
  induce->callback([args, exit_code] { *exit_code = Induce(*args); });
  auto* annotate = email->add_subcommand("annotate", "Annotate emails with the templates of a store (forwarding them to clustering)");
  common(annotate);
  annotate->add_option("--store", args->store, "the cluster store an induce run kept")->required();
  annotate->callback([args, exit_code] { *exit_code = Annotate(*args); });
  auto* eval = email->add_subcommand("eval", "Both fingerprint modes side by side on labelled emails: purity, coverage, fragmentation");
  common(eval);
  eval->add_option("--batch-sample", args->batch_sample,
                   "sampling rate of the daily batch re-clustering the online delay is compared with")
      ->capture_default_str()
      ->check(CLI::Range(1e-6, 1.0));
  eval->callback([args, exit_code] { *exit_code = Eval(*args); });
  auto* serve = email->add_subcommand("serve", "Serve the email endpoints alone: POST /v1/emails, POST /v1/emails/annotate, "
                                               "GET /v1/templates/{id}; /v1/threads and /v1/domain-events, "
                                               "/v1/domains/classify with their stores");
  serve->add_option("--store", args->store, "the cluster store's directory (created when missing)")->required();
  serve->add_option("--config", args->config, "configuration (configs/email.textproto); defaults otherwise");
  serve->add_option("--k", args->k, "k-anonymity: unique recipients a template needs (overrides email.k)");
  serve->add_option("--listen", args->listen, "host:port to listen on (port 0: a free one)")->capture_default_str();
  serve->add_option("--bearer-token-file", args->token_file, "file holding the writers' bearer token");
  serve->add_option("--port-file", args->port_file, "write the port here once listening (for scripts)");
  serve->add_option("--tls-dir", args->tls_dir, "HTTPS with DIR/member.pem and member.key (neardup certs init)");
  serve->add_option("--threads-store", args->threads_store, "unified threads' store: serves POST and GET /v1/threads");
  serve->add_option("--domains-store", args->domains_store,
                    "domain counts' store: serves POST /v1/domain-events and GET /v1/domains/classify");
  serve->callback([args, exit_code] { *exit_code = Serve(*args); });
  AddEmailThreads(email, exit_code);
  AddEmailDomains(email, exit_code);
  AddEmailGenThreads(email, exit_code);
  AddEmailGenDomains(email, exit_code);
}

}  // namespace neardup::cli
