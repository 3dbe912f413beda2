// neardup tier2-server: a Tier 2 server (cluster/tier2_server/tier2_server.h) until SIGINT or SIGTERM.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>
#include <optional>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "cluster/tier2_server/tier2_server.h"
#include "common/config.h"

namespace neardup::cli {

void RegisterTier2Server(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("tier2-server", "Serve Tier 2 shards over TCP to a Tier 1 (neardup run --tier2)");
  struct Args {
    std::string config, port_file;
    std::optional<std::string> listen, store, tls_dir;
    std::optional<int> io_threads, work_threads;
    std::optional<uint32_t> stall_timeout_ms, idle_timeout_ms;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--config", a->config, "configuration (its tier2_server section; the flags below override it)");
  cmd->add_option("--listen", a->listen, "host:port to listen on (port 0: any free one)");
  cmd->add_option("--store", a->store, "directory of this server's shards");
  cmd->add_option("--io-threads", a->io_threads, "network threads")->check(CLI::PositiveNumber);
  cmd->add_option("--work-threads", a->work_threads, "threads that compare and write")->check(CLI::PositiveNumber);
  cmd->add_option("--stall-timeout-ms", a->stall_timeout_ms,
                  "close a connection whose begun frame (or answer) does not move for this long")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--idle-timeout-ms", a->idle_timeout_ms, "close a connection with no new frame for this long")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--tls-dir", a->tls_dir,
                  "mutual TLS with DIR/ca.pem, member.pem, member.key (neardup certs init; overrides tier2_server.tls)");
  cmd->add_option("--port-file", a->port_file, "write the port listened on here once listening (for scripts)");
  cmd->callback([a, exit_code] {
    auto cfg = a->config.empty() ? StatusOr<pb::NeardupConfig>(DefaultConfig()) : LoadConfig(a->config);
    if (!cfg.ok()) {
      spdlog::error("{}", cfg.status().message());
      *exit_code = 2;
      return;
    }
    const pb::Tier2ServerConfig& c = cfg->tier2_server();
    cluster::Tier2ServerOptions o;
    o.listen = a->listen.value_or(c.listen());
    o.store = a->store.value_or(c.store());
    o.io_threads = a->io_threads.value_or(static_cast<int>(c.io_threads()));
    o.work_threads = a->work_threads.value_or(static_cast<int>(c.work_threads()));
    o.stall_timeout_ms = a->stall_timeout_ms.value_or(c.stall_timeout_ms());
    o.idle_timeout_ms = a->idle_timeout_ms.value_or(c.idle_timeout_ms());
    o.max_connections = c.max_connections();
    o.max_request_bytes = c.max_request_bytes();
    o.max_inflight_bytes = c.max_inflight_bytes();
    o.tls = a->tls_dir ? cluster::TlsFiles::InDir(*a->tls_dir) : cluster::TlsFiles::From(c.tls());
    if (o.store.empty()) {
      spdlog::error("tier2-server: --store (or tier2_server.store) is required");
      *exit_code = 2;
      return;
    }
    // SIGINT and SIGTERM are taken by this thread (sigwait), not by the server's threads.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    auto server = cluster::Tier2Server::Start(o);
    if (!server.ok()) {
      spdlog::error("{}", server.status().message());
      *exit_code = server.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
      return;
    }
    spdlog::info("tier2-server: serving {} on port {}", o.store, (*server)->port());
    WritePortFile(a->port_file, (*server)->port());
    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info("tier2-server: signal {}: stopping", sig);
    (*server)->Stop();
    *exit_code = 0;
  });
}

}  // namespace neardup::cli
