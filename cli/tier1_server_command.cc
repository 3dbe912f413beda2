// neardup tier1-server: the group store, the batch loop over the ingest log and the crawlers'
// HTTP API (cluster/tier1_server/tier1_service.h, cluster/api/http_api.h), until SIGINT or SIGTERM.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "cluster/http/bearer_token.h"
#include "cluster/api/http_api.h"
#include "cluster/http/tls.h"
#include "cluster/http/http_server.h"
#include "cluster/tier1_server/tier1_service.h"
#include "cluster/http/net.h"
#include "common/config.h"

namespace neardup::cli {

namespace {

struct Tier1ServerArgs {
  std::optional<std::string> listen, store, map, token_file, tier2_tls_dir, tls_dir;
  std::vector<std::string> tier2;
  std::string port_file;
  std::optional<uint32_t> batch, new_store_shards;
};

// Logs the error; the exit code: 2 for InvalidArgument, else 1.
int Tier1ServerFailed(const Status& s) {
  spdlog::error("{}", s.message());
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

void AddTier1ServerFlags(CLI::App* cmd, SharedOptions* shared, Tier1ServerArgs* a) {
  AddSharedOptions(cmd, shared);
  cmd->add_option("--listen", a->listen, "host:port of the HTTP API (overrides tier1_server.listen)");
  cmd->add_option("--store", a->store, "store directory (overrides tier1_server.store)");
  cmd->add_option("--map", a->map, "partition map of a new store (overrides tier1_server.map)");
  cmd->add_option("--tier2", a->tier2, "Tier 2 servers host:port,... (overrides tier1_server.tier2)")->delimiter(',');
  cmd->add_option("--bearer-token-file", a->token_file, "file holding the writers' bearer token");
  cmd->add_option("--tier2-tls-dir", a->tier2_tls_dir,
                  "mutual TLS to the Tier 2 servers with DIR/ca.pem, member.pem, member.key (overrides tier1_server.tier2_tls)");
  cmd->add_option("--tls-dir", a->tls_dir,
                  "HTTPS on the API with DIR/member.pem and member.key (DIR/ca.pem for the clients; overrides "
                  "tier1_server.tls)");
  cmd->add_option("--batch", a->batch, "pages per batch (B)");
  cmd->add_option("--new-store-shards", a->new_store_shards,
                  "shards of the map a new store given no map builds from its first records (default pipeline.shards; "
                  "no effect on a store that has a map)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--port-file", a->port_file, "write the API's port here once listening (for scripts)");
}

// The service's options: the configuration with the flags applied over tier1_server.
cluster::Tier1ServiceOptions ServiceOptionsFrom(const ResolvedOptions& opts, const Tier1ServerArgs& args) {
  cluster::Tier1ServiceOptions so;
  so.config = opts.config;
  pb::Tier1ServerConfig& c = *so.config.mutable_tier1_server();
  if (args.listen) c.set_listen(*args.listen);
  if (args.store) c.set_store(*args.store);
  if (args.map) c.set_map(*args.map);
  if (!args.tier2.empty()) {
    c.clear_tier2();
    for (const auto& t : args.tier2) c.add_tier2(t);
  }
  if (args.token_file) c.set_bearer_token_file(*args.token_file);
  if (args.tier2_tls_dir) {
    const cluster::TlsFiles t = cluster::TlsFiles::InDir(*args.tier2_tls_dir);
    c.mutable_tier2_tls()->set_ca_file(t.ca);
    c.mutable_tier2_tls()->set_cert_file(t.cert);
    c.mutable_tier2_tls()->set_key_file(t.key);
  }
  if (args.tls_dir) {
    const cluster::TlsFiles t = cluster::TlsFiles::InDir(*args.tls_dir);
    c.mutable_tls()->set_ca_file(t.ca);
    c.mutable_tls()->set_cert_file(t.cert);
    c.mutable_tls()->set_key_file(t.key);
  }
  so.threshold = opts.threshold;
  so.signer = opts.signer;
  so.given = opts.given;
  so.batch_pages = args.batch.value_or(so.config.tier2().batch_pages());
  so.new_store_shards = args.new_store_shards.value_or(0);
  // Crash tests: NEARDUP_REBALANCE_KILL_AT=K kills the server (SIGKILL) after a rebalance's K-th
  // durable step, as `neardup rebalance --store` does.
  if (const char* k = std::getenv("NEARDUP_REBALANCE_KILL_AT"); k != nullptr && *k != '\0') {
    const uint64_t at = std::strtoull(k, nullptr, 10);
    auto calls = std::make_shared<std::atomic<uint64_t>>(0);
    so.rebalance_on_step = [at, calls](uint64_t) {
      if (++*calls == at) std::raise(SIGKILL);
      return true;
    };
  }
  return so;
}

// The writers' and readers' bearer tokens, from the configuration or the files it names.
Status ReadTokens(const pb::Tier1ServerConfig& c, std::string* token, std::string* read_token) {
  *token = c.bearer_token();
  *read_token = c.read_bearer_token();
  if (!c.bearer_token_file().empty()) {
    auto t = cluster::ReadBearerTokenFile(c.bearer_token_file());
    if (!t.ok()) return InvalidArgument("tier1-server: " + t.status().message());
    *token = *t;
  }
  if (!c.read_bearer_token_file().empty()) {
    auto t = cluster::ReadBearerTokenFile(c.read_bearer_token_file());
    if (!t.ok()) return InvalidArgument("tier1-server: " + t.status().message());
    *read_token = *t;
  }
  return Status::Ok();
}

// The API's TLS context (null: plain HTTP), and the rules of what it may serve: beyond loopback
// only over HTTPS with a token; threads and domains stores only beside the email store.
StatusOr<std::shared_ptr<boost::asio::ssl::context>> ApiTls(const pb::Tier1ServerConfig& c, const std::string& host,
                                                            const std::string& token) {
  // HTTPS when the configuration gives the API a certificate; beyond loopback, required, with a
  // token (as a server that anyone on the network reaches must be).
  std::shared_ptr<boost::asio::ssl::context> tls;
  if (!c.tls().cert_file().empty() || !c.tls().key_file().empty()) {
    auto ctx = cluster::MakeHttpsServerContext(cluster::TlsFiles::From(c.tls()));
    if (!ctx.ok()) return InvalidArgument("tier1-server: tier1_server.tls: " + ctx.status().message());
    tls = *ctx;
  }
  if (!cluster::IsLoopbackHost(host) && (token.empty() || tls == nullptr)) {
    return InvalidArgument("tier1-server: listening on " + c.listen() + " (beyond loopback) needs " +
                           (tls == nullptr ? "HTTPS (tier1_server.tls or --tls-dir)" : "") +
                           (tls == nullptr && token.empty() ? " and " : "") +
                           (token.empty() ? "a bearer token (tier1_server.bearer_token or bearer_token_file)" : ""));
  }
  if (c.email_store().empty() && (!c.threads_store().empty() || !c.domains_store().empty())) {
    return InvalidArgument(std::string("tier1-server: tier1_server.") +
                           (c.threads_store().empty() ? "domains_store" : "threads_store") +
                           " is served by the email endpoints: set tier1_server.email_store too");
  }
  return tls;
}

// Opens the service, serves the API (and the email endpoints) until SIGINT or SIGTERM (blocked in
// `signals`), and stops them; the exit code.
int ServeTier1(const cluster::Tier1ServiceOptions& so, const std::string& token, const std::string& read_token,
          const std::string& host, std::shared_ptr<boost::asio::ssl::context> tls, const std::string& port_file,
          sigset_t signals) {
  const pb::Tier1ServerConfig& c = so.config.tier1_server();
  auto service = cluster::Tier1Service::Open(so);
  if (!service.ok()) return Tier1ServerFailed(service.status());
  cluster::HttpApi api(service->get(),
                       cluster::HttpApi::OptionsFrom(so.config, token, read_token, cluster::IsLoopbackHost(host)));
  std::unique_ptr<cluster::EmailApi> email;
  if (!c.email_store().empty()) {
    auto e = cluster::EmailApi::Open({.config = so.config.email(),
                                      .store = c.email_store(),
                                      .bearer_token = token,
                                      .work_threads = static_cast<int>(c.work_threads()),
                                      .retry_after_seconds = c.retry_after_seconds(),
                                      .max_line_bytes = so.config.reader().max_line_bytes(),
                                      .threads_store = c.threads_store(),
                                      .domains_store = c.domains_store()});
    if (!e.ok()) {
      (*service)->Stop();
      return Tier1ServerFailed(e.status());
    }
    email = std::move(*e);
    api.set_email(email.get());
  }
  cluster::HttpServerOptions ho;
  ho.listen = c.listen();
  ho.io_threads = static_cast<int>(c.io_threads());
  ho.max_header_bytes = c.max_header_bytes();
  ho.max_body_bytes = c.max_body_bytes();
  ho.read_timeout_ms = c.read_timeout_ms();
  ho.idle_timeout_ms = c.idle_timeout_ms();
  ho.max_connections = c.max_connections();
  ho.tls = tls;
  auto server = cluster::HttpServer::Start(ho, api.Handler(), api.HeaderCheck());
  if (!server.ok()) {
    (*service)->Stop();
    return Tier1ServerFailed(server.status());
  }
  api.set_server(server->get());
  spdlog::info("tier1-server: store {}, API on {}://{}:{}/ ({} Tier 2 servers{})", c.store(), tls ? "https" : "http",
               host.find(':') != std::string::npos ? "[" + host + "]" : host, (*server)->port(),
               c.tier2_size(), email ? ", email store " + c.email_store() : std::string());
  WritePortFile(port_file, (*server)->port());
  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("tier1-server: signal {}: stopping", sig);
  // The API stops first (nothing more is accepted), then the loop commits what it holds.
  (*server)->Stop();
  if (!(*service)->Stop()) {
    spdlog::warn("tier1-server: the batch loop did not stop within {} ms; exiting (the ingest log keeps every "
                 "acknowledged record)", c.stop_deadline_ms());
    std::fflush(nullptr);
    ::_exit(0);
  }
  api.Stop();
  if (email) {
    if (Status s = email->Stop(); !s.ok()) spdlog::warn("tier1-server: email clustering: {}", s.message());
  }
  return 0;
}

}  // namespace

void RegisterTier1Server(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("tier1-server",
                                 "Serve the crawlers' HTTP API: ingest, status, groups; Tier 1 and the batch loop");
  auto shared = std::make_shared<SharedOptions>();
  auto a = std::make_shared<Tier1ServerArgs>();
  AddTier1ServerFlags(cmd, shared.get(), a.get());
  cmd->callback([shared, a, exit_code] {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    auto opts = ResolveShared(*shared);
    if (!opts.ok()) { *exit_code = Tier1ServerFailed(opts.status()); return; }
    const cluster::Tier1ServiceOptions so = ServiceOptionsFrom(*opts, *a);
    const pb::Tier1ServerConfig& c = so.config.tier1_server();
    std::string token, read_token;
    if (Status s = ReadTokens(c, &token, &read_token); !s.ok()) { *exit_code = Tier1ServerFailed(s); return; }
    std::string host;
    uint16_t port = 0;
    if (Status s = cluster::ParseHostPort(c.listen(), &host, &port); !s.ok()) { *exit_code = Tier1ServerFailed(s); return; }
    auto tls = ApiTls(c, host, token);
    if (!tls.ok()) { *exit_code = Tier1ServerFailed(tls.status()); return; }
    *exit_code = ServeTier1(so, token, read_token, host, *tls, a->port_file, signals);
  });
}

}  // namespace neardup::cli
