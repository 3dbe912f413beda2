// neardup cluster up / scale / down: a whole cluster on this host under a supervisor
// (cluster/ops/supervisor.h), its Tier 2 servers added or drained while it runs, and stopping it.
#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <thread>

#include "cli/commands.h"
#include "cluster/ops/membership.h"
#include "cluster/ops/supervisor.h"
#include "common/config.h"
#include "storage/file_env.h"

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

// cluster scale's request and answer, in files beside the membership: the request is read when
// the supervisor gets SIGHUP; the answer is written (atomically) once the scaling ended.
constexpr char kScaleRequest[] = "scale.request";
constexpr char kScaleResult[] = "scale.result";

// The file's text; empty when there is none (yet).
std::string ReadWhole(const std::string& path) {
  std::string text;
  return ReadWholeFile(FileEnv::Default(), path, &text).ok() ? text : std::string();
}

// "key=value" lines: id (the requester's, echoed as the answer's first line), tier2_servers,
// max_move, max_mb_per_s, min_batch_share.
StatusOr<cluster::ScaleRequest> ParseScaleRequest(const std::string& text, std::string* id) {
  cluster::ScaleRequest q;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) return InvalidArgument("cluster scale: a request line without '=': " + line);
    const std::string key = line.substr(0, eq);
    const double v = std::strtod(line.c_str() + eq + 1, nullptr);
    if (key == "id") *id = line.substr(eq + 1);
    else if (key == "tier2_servers") q.tier2_servers = static_cast<uint32_t>(v);
    else if (key == "max_move") q.max_move = v;
    else if (key == "max_mb_per_s") q.max_mb_per_s = v;
    else if (key == "min_batch_share") q.min_batch_share = v;
    else return InvalidArgument("cluster scale: unknown request key " + key);
  }
  return q;
}

// Supervises until SIGINT or SIGTERM (taken by a thread of its own through sigwait); SIGHUP runs
// the scale request found beside the membership, one at a time, on a thread of its own.
int Supervise(cluster::Supervisor& sup, const std::string& dir) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  std::thread scaler;
  std::atomic<bool> scaling{false};
  std::thread waiter([&] {
    for (;;) {
      int sig = 0;
      sigwait(&signals, &sig);
      if (sig != SIGHUP) {
        spdlog::info("cluster: signal {}: stopping the members", sig);
        sup.RequestStop();
        return;
      }
      // The answer names the request it answers (its id): a requester waits for its own.
      auto answer = [&dir](const std::string& id, const std::string& text) {
        if (Status s = WriteFileAtomically(FileEnv::Default(), dir + "/" + kScaleResult, id + "\n" + text + "\n", false);
            !s.ok()) {
          spdlog::warn("cluster: {}", s.message());
        }
      };
      std::string id;
      auto q = ParseScaleRequest(ReadWhole(dir + "/" + kScaleRequest), &id);
      if (scaling.exchange(true)) {
        answer(id, "error: a scaling is running");
        continue;
      }
      if (scaler.joinable()) scaler.join();
      scaler = std::thread([&sup, &scaling, answer, id, q] {
        StatusOr<std::string> r = q.ok() ? sup.Scale(*q) : StatusOr<std::string>(q.status());
        answer(id, r.ok() ? *r : "error: " + r.status().ToString());
        scaling = false;
      });
    }
  });
  sup.Run();
  // Run returns only after RequestStop, which the waiter called.
  waiter.join();
  if (scaler.joinable()) scaler.join();
  spdlog::info("cluster: stopped");
  return 0;
}

// cluster up in the background: the child supervises, the parent reports once it is healthy (or
// why not); the exit code.
int UpInBackground(const cluster::SupervisorOptions& so, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir + "/logs", ec);
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) {  // the members must not hold it open
    spdlog::error("cluster: pipe: {}", std::strerror(errno));
    return 1;
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    spdlog::error("cluster: fork: {}", std::strerror(errno));
    return 1;
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
    const int rc = Supervise(sup, dir);
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
    return 1;
  }
  std::cout << "cluster: up (supervisor pid " << pid << ", logs in " << dir << "/logs); the API is at "
            << report.substr(1) << "\n";
  if (std::filesystem::exists(dir + "/token")) {
    std::cout << "cluster: writers present the bearer token in " << dir
              << "/token (the clients given this --config find it there)\n";
  }
  if (report.substr(1).starts_with("https://") && std::filesystem::exists(dir + "/ca.pem")) {
    std::cout << "cluster: the API's certificate is signed by the CA in " << dir
              << "/ca.pem (the clients given this --config check it there)\n";
  }
  return 0;
}

// cluster up: starts the members and supervises them, here (--foreground) or in the background;
// the exit code.
int ClusterUp(const std::string& config, bool foreground) {
  auto cfg = ClusterConfigFrom(config);
  if (!cfg.ok()) {
    spdlog::error("{}", cfg.status().message());
    return 2;
  }
  cluster::SupervisorOptions so;
  so.binary = SelfPath();
  so.config_path = config.empty() ? "" : std::filesystem::absolute(config).string();
  so.config = *cfg;
  const std::string dir = cfg->cluster().dir();
  // Blocked before any thread exists, so that every thread (and the children) inherits it.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  if (foreground) {
    cluster::Supervisor sup(so);
    if (Status s = sup.Start(); !s.ok()) {
      spdlog::error("{}", s.message());
      return 1;
    }
    std::cout << "cluster: up; the API is at " << sup.api() << "\n";
    if (std::filesystem::exists(dir + "/token")) std::cout << "cluster: writers' bearer token in " << dir << "/token\n";
    std::cout << std::flush;
    return Supervise(sup, dir);
  }
  return UpInBackground(so, dir);
}

// cluster scale: asks the running supervisor (SIGHUP and a request file) and waits for its answer;
// the exit code.
int ClusterScale(const std::string& config, const cluster::ScaleRequest& sq, uint32_t timeout_s) {
  auto cfg = ClusterConfigFrom(config);
  if (!cfg.ok()) {
    spdlog::error("{}", cfg.status().message());
    return 2;
  }
  const std::string dir = cfg->cluster().dir();
  auto view = cluster::FileMembership(dir + "/membership.textproto")->Read();
  const pid_t pid = view.ok() ? static_cast<pid_t>(view->supervisor_pid()) : 0;
  if (pid <= 0 || ::kill(pid, 0) != 0) {
    spdlog::error("cluster: no running cluster in {} (start it with cluster up)", dir);
    return 1;
  }
  const std::string id = fmt::format("{}-{}", ::getpid(), std::chrono::steady_clock::now().time_since_epoch().count());
  const std::string request =
      fmt::format("id={}\ntier2_servers={}\nmax_move={}\nmax_mb_per_s={}\nmin_batch_share={}\n", id,
                  sq.tier2_servers, sq.max_move, sq.max_mb_per_s, sq.min_batch_share);
  if (Status s = WriteFileAtomically(FileEnv::Default(), dir + "/" + kScaleRequest, request, false); !s.ok()) {
    spdlog::error("{}", s.message());
    return 1;
  }
  ::kill(pid, SIGHUP);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::string result;
  while (std::chrono::steady_clock::now() < deadline && ::kill(pid, 0) == 0) {
    const std::string answer = ReadWhole(dir + "/" + kScaleResult);
    if (answer.starts_with(id + "\n")) {
      result = answer.substr(id.size() + 1);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (result.empty()) {
    spdlog::error("cluster: the scaling did not end within {} s (see {}/logs/supervisor.log)", timeout_s, dir);
    return 1;
  }
  std::cout << result << std::flush;
  return result.starts_with("error:") ? 1 : 0;
}

// cluster down: SIGTERM to the supervisor, then waits for it to stop; the exit code.
int ClusterDown(const std::string& config, uint32_t timeout_s) {
  auto cfg = ClusterConfigFrom(config);
  if (!cfg.ok()) {
    spdlog::error("{}", cfg.status().message());
    return 2;
  }
  auto view = cluster::FileMembership(cfg->cluster().dir() + "/membership.textproto")->Read();
  if (!view.ok()) {
    spdlog::error("cluster: no cluster in {}: {}", cfg->cluster().dir(), view.status().message());
    return 1;
  }
  const pid_t pid = static_cast<pid_t>(view->supervisor_pid());
  if (pid <= 0 || ::kill(pid, SIGTERM) != 0) {
    std::cout << "cluster: the supervisor (pid " << pid << ") is not running\n";
    return 0;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (::kill(pid, 0) == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (::kill(pid, 0) == 0) {
    spdlog::error("cluster: the supervisor (pid {}) did not stop within {} s", pid, timeout_s);
    return 1;
  }
  std::cout << "cluster: down\n";
  return 0;
}

}  // namespace

void RegisterCluster(CLI::App& app, int* exit_code) {
  auto* cluster = app.add_subcommand("cluster", "A whole cluster on this host: up, scale, down");
  cluster->require_subcommand(1);

  auto* up = cluster->add_subcommand("up", "Start one Tier 1 and N Tier 2 servers, wait until healthy, supervise them");
  auto config = std::make_shared<std::string>();
  auto foreground = std::make_shared<bool>(false);
  up->add_option("--config", *config, "cluster configuration (cluster, tier1_server, tier2_server sections)");
  up->add_flag("--foreground", *foreground, "supervise in this process (default: in the background, once healthy)");
  up->callback([config, foreground, exit_code] { *exit_code = ClusterUp(*config, *foreground); });

  auto* scale = cluster->add_subcommand("scale", "Add or drain Tier 2 servers of a cluster started with cluster up, while "
                                                  "it takes ingest (one shard per server; the pages move between batches)");
  auto sconfig = std::make_shared<std::string>();
  auto sq = std::make_shared<cluster::ScaleRequest>();
  auto stimeout = std::make_shared<uint32_t>(3600);
  scale->add_option("--config", *sconfig, "the cluster's configuration (its cluster.dir)");
  scale->add_option("--tier2-servers", sq->tier2_servers, "Tier 2 servers after it")->required()->check(CLI::Range(1, 256));
  scale->add_option("--max-move", sq->max_move, "share of resident pages cell moves may move (more when the new "
                                                "server count needs more to reach the balance target)")
      ->capture_default_str()->check(CLI::Range(0.0, 1.0));
  scale->add_option("--max-mb-per-s", sq->max_mb_per_s, "copy at most this many MB of signatures per second (0: no limit)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  scale->add_option("--min-batch-share", sq->min_batch_share, "share of the batch loop's time its batches keep while "
                                                              "pages move (default: pipeline.move_min_batch_share)")
      ->check(CLI::Range(0.05, 1.0));
  scale->add_option("--timeout", *stimeout, "seconds to wait for it")->capture_default_str();
  scale->callback([sconfig, sq, stimeout, exit_code] { *exit_code = ClusterScale(*sconfig, *sq, *stimeout); });

  auto* down = cluster->add_subcommand("down", "Stop a cluster started with cluster up (the Tier 1 server first)");
  auto dconfig = std::make_shared<std::string>();
  auto timeout = std::make_shared<uint32_t>(120);
  down->add_option("--config", *dconfig, "the cluster's configuration (its cluster.dir)");
  down->add_option("--timeout", *timeout, "seconds to wait for it to stop")->capture_default_str();
  down->callback([dconfig, timeout, exit_code] { *exit_code = ClusterDown(*dconfig, *timeout); });
}

}  // namespace neardup::cli
