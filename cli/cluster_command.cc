// neardup cluster up / down: a whole cluster on this host under a supervisor
// (cluster/supervisor.h), and stopping it.
#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <thread>

#include "cli/commands.h"
#include "cluster/membership.h"
#include "cluster/supervisor.h"
#include "common/config.h"

namespace neardup::cli {
namespace {

// The running binary (the members run the same one).
std::string SelfPath() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("neardup") : p.string();
}

StatusOr<pb::NeardupConfig> ClusterConfigFrom(const std::string& path) {
  if (path.empty()) return DefaultConfig();
  return LoadConfig(path);
}

// Supervises until SIGINT or SIGTERM (taken by a thread of its own through sigwait).
int Supervise(cluster::Supervisor& sup) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info("cluster: signal {}: stopping the members", sig);
    sup.RequestStop();
  });
  sup.Run();
  // Run returns only after RequestStop, which the waiter called.
  waiter.join();
  spdlog::info("cluster: stopped");
  return 0;
}

}  // namespace

void RegisterCluster(CLI::App& app, int* exit_code) {
  auto* cluster = app.add_subcommand("cluster", "A whole cluster on this host: up, down");
  cluster->require_subcommand(1);

  auto* up = cluster->add_subcommand("up", "Start one Tier 1 and N Tier 2 servers, wait until healthy, supervise them");
  auto config = std::make_shared<std::string>();
  auto foreground = std::make_shared<bool>(false);
  up->add_option("--config", *config, "cluster configuration (cluster, tier1_server, tier2_server sections)");
  up->add_flag("--foreground", *foreground, "supervise in this process (default: in the background, once healthy)");
  up->callback([config, foreground, exit_code] {
    auto cfg = ClusterConfigFrom(*config);
    if (!cfg.ok()) {
      spdlog::error("{}", cfg.status().message());
      *exit_code = 2;
      return;
    }
    cluster::SupervisorOptions so;
    so.binary = SelfPath();
    so.config_path = config->empty() ? "" : std::filesystem::absolute(*config).string();
    so.config = *cfg;
    const std::string dir = cfg->cluster().dir();
    // Blocked before any thread exists, so that every thread (and the children) inherits it.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    if (*foreground) {
      cluster::Supervisor sup(so);
      if (Status s = sup.Start(); !s.ok()) {
        spdlog::error("{}", s.message());
        *exit_code = 1;
        return;
      }
      std::cout << "cluster: up; the API is at " << sup.api() << "\n" << std::flush;
      *exit_code = Supervise(sup);
      return;
    }
    // In the background: the child supervises, the parent reports once it is healthy.
    std::error_code ec;
    std::filesystem::create_directories(dir + "/logs", ec);
    int pipefd[2];
    if (::pipe2(pipefd, O_CLOEXEC) != 0) {  // the members must not hold it open
      spdlog::error("cluster: pipe: {}", std::strerror(errno));
      *exit_code = 1;
      return;
    }
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) {
      spdlog::error("cluster: fork: {}", std::strerror(errno));
      *exit_code = 1;
      return;
    }
    if (pid == 0) {
      ::close(pipefd[0]);
      ::setsid();
      const int log = ::open((dir + "/logs/supervisor.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      const int null = ::open("/dev/null", O_RDONLY);
      if (null >= 0) ::dup2(null, 0);
      if (log >= 0) ::dup2(log, 1), ::dup2(log, 2);
      cluster::Supervisor sup(so);
      Status s = sup.Start();
      const std::string report = s.ok() ? "1" + sup.api() : "0" + s.message();
      (void)!::write(pipefd[1], report.data(), report.size());
      ::close(pipefd[1]);
      if (!s.ok()) std::_Exit(1);
      const int rc = Supervise(sup);
      std::fflush(nullptr);
      std::_Exit(rc);
    }
    ::close(pipefd[1]);
    std::string report;
    char buf[4096];
    for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof(buf))) > 0;) report.append(buf, static_cast<size_t>(n));
    ::close(pipefd[0]);
    if (report.empty() || report[0] != '1') {
      spdlog::error("cluster: did not come up: {}", report.empty() ? "the supervisor died (see " + dir + "/logs)" : report.substr(1));
      ::waitpid(pid, nullptr, 0);
      *exit_code = 1;
      return;
    }
    std::cout << "cluster: up (supervisor pid " << pid << ", logs in " << dir << "/logs); the API is at "
              << report.substr(1) << "\n";
    *exit_code = 0;
  });

  auto* down = cluster->add_subcommand("down", "Stop a cluster started with cluster up (the Tier 1 server first)");
  auto dconfig = std::make_shared<std::string>();
  auto timeout = std::make_shared<uint32_t>(120);
  down->add_option("--config", *dconfig, "the cluster's configuration (its cluster.dir)");
  down->add_option("--timeout", *timeout, "seconds to wait for it to stop")->capture_default_str();
  down->callback([dconfig, timeout, exit_code] {
    auto cfg = ClusterConfigFrom(*dconfig);
    if (!cfg.ok()) {
      spdlog::error("{}", cfg.status().message());
      *exit_code = 2;
      return;
    }
    auto view = cluster::FileMembership(cfg->cluster().dir() + "/membership.textproto")->Read();
    if (!view.ok()) {
      spdlog::error("cluster: no cluster in {}: {}", cfg->cluster().dir(), view.status().message());
      *exit_code = 1;
      return;
    }
    const pid_t pid = static_cast<pid_t>(view->supervisor_pid());
    if (pid <= 0 || ::kill(pid, SIGTERM) != 0) {
      std::cout << "cluster: the supervisor (pid " << pid << ") is not running\n";
      *exit_code = 0;
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(*timeout);
    while (::kill(pid, 0) == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (::kill(pid, 0) == 0) {
      spdlog::error("cluster: the supervisor (pid {}) did not stop within {} s", pid, *timeout);
      *exit_code = 1;
      return;
    }
    std::cout << "cluster: down\n";
    *exit_code = 0;
  });
}

}  // namespace neardup::cli
