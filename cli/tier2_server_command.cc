// neardup tier2-server: a Tier 2 server (cluster/tier2_server.h) until SIGINT or SIGTERM.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>

#include "cli/commands.h"
#include "cluster/tier2_server.h"

namespace neardup::cli {

void RegisterTier2Server(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("tier2-server", "Serve Tier 2 shards over TCP to a Tier 1 (neardup run --tier2)");
  auto o = std::make_shared<cluster::Tier2ServerOptions>();
  auto port_file = std::make_shared<std::string>();
  cmd->add_option("--listen", o->listen, "host:port to listen on (port 0: any free one)")->capture_default_str();
  cmd->add_option("--store", o->store, "directory of this server's shards")->required();
  cmd->add_option("--io-threads", o->io_threads, "network threads")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--work-threads", o->work_threads, "threads that compare and write")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--stall-timeout-ms", o->stall_timeout_ms,
                  "close a connection whose begun frame (or answer) does not move for this long")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--idle-timeout-ms", o->idle_timeout_ms, "close a connection with no new frame for this long")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--port-file", *port_file, "write the port listened on here once listening (for scripts)");
  cmd->callback([o, port_file, exit_code] {
    // SIGINT and SIGTERM are taken by this thread (sigwait), not by the server's threads.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    auto server = cluster::Tier2Server::Start(*o);
    if (!server.ok()) {
      spdlog::error("{}", server.status().message());
      *exit_code = server.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
      return;
    }
    spdlog::info("tier2-server: serving {} on port {}", o->store, (*server)->port());
    if (!port_file->empty()) {
      const std::string tmp = *port_file + ".tmp";
      std::ofstream(tmp) << (*server)->port() << "\n";
      std::rename(tmp.c_str(), port_file->c_str());
    }
    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info("tier2-server: signal {}: stopping", sig);
    (*server)->Stop();
    *exit_code = 0;
  });
}

}  // namespace neardup::cli
