// ProcessTest: a BinaryTest that runs neardup servers as processes of its own (Start), each
// killed (SIGKILL) and waited for when the test ends, whatever its outcome.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/binary_test.h"

namespace neardup {

class ProcessTest : public BinaryTest {
 protected:
  void TearDown() override {
    for (auto& [name, pid] : procs_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    procs_.clear();
    BinaryTest::TearDown();
  }

  // Starts `neardup <args> --port-file F` as process `name` (standard error to NAME.log); its port
  // once F appears ("" after 30 s).
  std::string Start(const std::string& name, std::vector<std::string> args) {
    const std::string port_file = Path(name + ".port");
    std::filesystem::remove(port_file);
    args.insert(args.begin(), {NEARDUP_BIN, "--log-level", "warn"});
    args.push_back("--port-file");
    args.push_back(port_file);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = Path(name + ".log");
    posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, NEARDUP_BIN, &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return "";
    procs_[name] = pid;
    for (int i = 0; i < 3000 && !std::filesystem::exists(port_file); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::string port = Read(port_file);
    while (!port.empty() && port.back() == '\n') port.pop_back();
    return port;
  }

  // Stops a cluster a failed test left up under `dir` (its supervisor runs detached): only when
  // that supervisor still runs `config` (its command line names it), so that a pid used again by
  // another process is never signalled.
  void StopLeftoverCluster(const std::string& dir, const std::string& config) {
    const std::string view = Read(dir + "/membership.textproto");
    if (const size_t at = view.find("supervisor_pid: "); at != std::string::npos) {
      const long pid = std::strtol(view.c_str() + at + 16, nullptr, 10);
      std::string cmdline = Read("/proc/" + std::to_string(pid) + "/cmdline");
      std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
      if (pid > 0 && cmdline.find("cluster up --config " + config) != std::string::npos) {
        (void)Neardup("cluster down --config " + config);
      }
    }
  }

  std::map<std::string, pid_t> procs_;  // the processes Start made, by name
};

}  // namespace neardup
