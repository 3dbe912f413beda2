// Tier 2 in other processes: `neardup tier2-server` processes on loopback hold the shards, and
// `neardup run --tier2` drives them. The groups and statuses are the embedded run's, a server
// stopped with SIGTERM exits 0, and a run whose servers are gone fails with a message naming them;
// the same through `neardup fault-proxy` processes.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "tests/binary_test.h"

extern char** environ;

namespace neardup {
namespace {

class ClusterTest : public BinaryTest {
 protected:
  void TearDown() override {
    for (pid_t pid : servers_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    BinaryTest::TearDown();
  }

  // Starts `neardup tier2-server` on a free loopback port; returns its host:port ("" on failure).
  std::string StartServer(const std::string& name) {
    return Start(name, {"tier2-server", "--store", Path(name)});
  }

  // Starts `neardup fault-proxy` to `target` on a free loopback port with `faults` (flags);
  // returns its host:port ("" on failure).
  std::string StartProxy(const std::string& name, const std::string& target, std::vector<std::string> faults) {
    std::vector<std::string> args = {"fault-proxy", "--target", target};
    args.insert(args.end(), faults.begin(), faults.end());
    return Start(name, args);
  }

  // Starts `neardup <command...> --port-file F` (kept in servers_); its loopback host:port once F
  // appears ("" on failure).
  std::string Start(const std::string& name, const std::vector<std::string>& command) {
    const std::string port_file = Path(name + ".port");
    std::vector<std::string> args = {NEARDUP_BIN, "--log-level", "warn"};
    args.insert(args.end(), command.begin(), command.end());
    args.push_back("--port-file");
    args.push_back(port_file);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (posix_spawn(&pid, NEARDUP_BIN, nullptr, nullptr, argv.data(), environ) != 0) return "";
    servers_.push_back(pid);
    // Listening once the port file appears (bounded: 30 s).
    for (int i = 0; i < 3000 && !std::filesystem::exists(port_file); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::string port = Read(port_file);
    while (!port.empty() && port.back() == '\n') port.pop_back();
    return port.empty() ? "" : "127.0.0.1:" + port;
  }

  // SIGTERM to the i-th server; its exit code (-1 if it had to be killed after 30 s).
  int StopServer(size_t i) {
    ::kill(servers_[i], SIGTERM);
    for (int t = 0; t < 3000; ++t) {
      int status = 0;
      if (::waitpid(servers_[i], &status, WNOHANG) == servers_[i]) {
        servers_.erase(servers_.begin() + static_cast<long>(i));
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

  std::vector<pid_t> servers_;
};

TEST_F(ClusterTest, RunOverTier2ServersGivesTheEmbeddedGroupsAndStatuses) {
  const std::string crawl = std::string(NEARDUP_SOURCE_DIR) + "/data/sample-crawl.jsonl";
  const std::string a = StartServer("tier2-a"), b = StartServer("tier2-b");
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  const std::string common = "--log-level warn run --input " + crawl + " --batch 100 --shards 4";
  Outcome remote = Neardup(common + " --store " + Path("remote") + " --out " + Path("remote.jsonl") +
                           " --status-out " + Path("remote-status.jsonl") + " --tier2 " + a + "," + b);
  ASSERT_EQ(remote.code, 0) << remote.err;
  Outcome local = Neardup(common + " --store " + Path("local") + " --out " + Path("local.jsonl") +
                          " --status-out " + Path("local-status.jsonl"));
  ASSERT_EQ(local.code, 0) << local.err;
  EXPECT_EQ(Read(Path("remote.jsonl")), Read(Path("local.jsonl")));
  EXPECT_EQ(Read(Path("remote-status.jsonl")), Read(Path("local-status.jsonl")));
  // Shards 0 and 2 on the first server, 1 and 3 on the second; none in the run's own store.
  EXPECT_TRUE(std::filesystem::exists(Path("tier2-a/shard-002")));
  EXPECT_TRUE(std::filesystem::exists(Path("tier2-b/shard-003")));
  EXPECT_FALSE(std::filesystem::exists(Path("remote/shard-000")));
  EXPECT_EQ(StopServer(1), 0);
  EXPECT_EQ(StopServer(0), 0);

  // The servers are gone: the run stops with an error that names one.
  Outcome gone = Neardup(common + " --store " + Path("gone") + " --tier2 " + a);
  EXPECT_EQ(gone.code, 1);
  EXPECT_NE(gone.err.find(a), std::string::npos) << gone.err;
}

// `neardup fault-proxy` between a run and a Tier 2 server: passing everything, the run is the
// embedded one; resetting every connection, the run fails naming the proxy's address. The proxies
// exit 0 on SIGTERM.
TEST_F(ClusterTest, RunThroughAFaultProxy) {
  const std::string crawl = std::string(NEARDUP_SOURCE_DIR) + "/data/sample-crawl.jsonl";
  const std::string server = StartServer("tier2");
  ASSERT_FALSE(server.empty());
  const std::string pass = StartProxy("pass", server, {"--mode", "pass", "--delay-ms", "1"});
  const std::string reset = StartProxy("reset", server, {"--mode", "reset"});
  ASSERT_FALSE(pass.empty());
  ASSERT_FALSE(reset.empty());
  const std::string common = "--log-level warn run --input " + crawl + " --batch 100 --shards 2";
  Outcome remote = Neardup(common + " --store " + Path("remote") + " --out " + Path("remote.jsonl") + " --tier2 " + pass);
  ASSERT_EQ(remote.code, 0) << remote.err;
  Outcome local = Neardup(common + " --store " + Path("local") + " --out " + Path("local.jsonl"));
  ASSERT_EQ(local.code, 0) << local.err;
  EXPECT_EQ(Read(Path("remote.jsonl")), Read(Path("local.jsonl")));

  Outcome refused = Neardup(common + " --store " + Path("refused") + " --tier2 " + reset);
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.err.find(reset), std::string::npos) << refused.err;
  EXPECT_EQ(StopServer(2), 0);  // the proxies
  EXPECT_EQ(StopServer(1), 0);

  Outcome usage = Neardup("fault-proxy --target " + server + " --mode sometimes");
  EXPECT_EQ(usage.code, 2);
  EXPECT_NE(usage.err.find("sometimes"), std::string::npos) << usage.err;
}

}  // namespace
}  // namespace neardup
