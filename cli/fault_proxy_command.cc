// neardup fault-proxy: a TCP proxy that injects network faults (cluster/fault_proxy/fault_proxy.h), for tests
// of processes (a `neardup run --tier2` through it to a `neardup tier2-server`), until SIGINT or
// SIGTERM.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "cluster/fault_proxy/fault_proxy.h"

namespace neardup::cli {

void RegisterFaultProxy(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("fault-proxy", "Forward TCP connections to a target, injecting faults (for tests)");
  struct Args {
    cluster::FaultProxyOptions options;
    std::string mode = "pass";
    std::string direction = "both";
    std::string port_file;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--listen", a->options.listen, "host:port to listen on (port 0: any free one)")->capture_default_str();
  cmd->add_option("--target", a->options.target, "host:port (an IP address) each connection is forwarded to")
      ->required();
  cmd->add_option("--mode", a->mode, "pass, drop, blackhole, truncate or reset")->capture_default_str();
  cmd->add_option("--delay-ms", a->options.faults.delay_ms, "delay before each forwarded chunk")->capture_default_str();
  cmd->add_option("--after-bytes", a->options.faults.after_bytes,
                  "truncate, reset: bytes of a direction forwarded before the connection is closed")
      ->capture_default_str();
  cmd->add_option("--direction", a->direction, "the direction blackhole, truncate and reset act on: both, to-server or to-client")
      ->capture_default_str();
  cmd->add_option("--port-file", a->port_file, "write the port listened on here once listening (for scripts)");
  cmd->callback([a, exit_code] {
    auto mode = cluster::ParseFaultMode(a->mode);
    auto direction = cluster::ParseFaultDirection(a->direction);
    if (!mode.ok() || !direction.ok()) {
      spdlog::error("{}", mode.ok() ? direction.status().message() : mode.status().message());
      *exit_code = 2;
      return;
    }
    a->options.faults.mode = *mode;
    a->options.faults.direction = *direction;
    // SIGINT and SIGTERM are taken by this thread (sigwait), not by the proxy's thread.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    auto proxy = cluster::FaultProxy::Start(a->options);
    if (!proxy.ok()) {
      spdlog::error("{}", proxy.status().message());
      *exit_code = proxy.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
      return;
    }
    spdlog::info("fault-proxy: port {} to {}, mode {}", (*proxy)->port(), a->options.target, a->mode);
    WritePortFile(a->port_file, (*proxy)->port());
    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info("fault-proxy: signal {}: stopping ({} connections, {} bytes to the target, {} back)", sig,
                 (*proxy)->connections(), (*proxy)->bytes_to_server(), (*proxy)->bytes_to_client());
    (*proxy)->Stop();
    *exit_code = 0;
  });
}

}  // namespace neardup::cli
