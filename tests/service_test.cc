// The cluster service end to end, in processes on loopback: Tier 2 servers, a Tier 1 server with
// the crawlers' HTTP API, and `neardup ingest`. What a crawl ingested over HTTP ends as equals
// `neardup run` on the same crawl; a Tier 2 server killed during ingest makes answers partial and
// pending, and costs nothing once it is back; a Tier 1 server killed loses nothing it
// acknowledged; `neardup eval --server` measures through the APIs what the embedded eval measures.
// Every wait is bounded.
#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include <gmock/gmock.h>
#include <simdjson.h>

#include "cluster/http/http_client.h"
#include "email/templates/email_test_util.h"
#include "tests/process_test.h"

extern char** environ;

namespace neardup {
namespace {

using std::chrono::milliseconds;

class ServiceTest : public ProcessTest {
 protected:
  void TearDown() override {
    StopLeftoverCluster(Path("cl"), Path("cluster.textproto"));
    ProcessTest::TearDown();
  }

  // Sends `sig`; the exit code (-1: killed by a signal, or still running after 30 s).
  int Signal(const std::string& name, int sig) {
    const pid_t pid = procs_.at(name);
    ::kill(pid, sig);
    for (int t = 0; t < 3000; ++t) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        procs_.erase(name);
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    return -1;
  }

  // A metric's value from /metrics (-1 when absent or unreachable).
  static double Metric(cluster::HttpClient& c, const std::string& name) {
    auto r = c.Request("GET", "/metrics", "");
    if (!r.ok()) return -1;
    const size_t at = r->body.find("\n" + name + " ");
    if (at == std::string::npos) return -1;
    return std::strtod(r->body.c_str() + at + name.size() + 2, nullptr);
  }

  // Waits (at most `seconds`) until every accepted record is committed: nothing pending.
  static bool WaitSettled(cluster::HttpClient& c, int seconds) {
    for (int i = 0; i < seconds * 10; ++i) {
      if (Metric(c, "neardup_pending_pages") == 0 && Metric(c, "neardup_ingest_backlog_bytes") == 0) return true;
      std::this_thread::sleep_for(milliseconds(100));
    }
    return false;
  }

  struct Answer {
    std::string status, winner;
    uint64_t group = 0;
    double completeness = 1;
  };
  static Answer Ask(cluster::HttpClient& c, const std::string& url) {
    Answer a;
    auto r = c.Request("GET", "/v1/status?url=" + cluster::UrlEncode(url), "");
    if (!r.ok() || r->status != 200) return a;
    simdjson::dom::parser p;
    simdjson::dom::element e;
    if (p.parse(r->body).get(e) != simdjson::SUCCESS) return a;
    a.status = std::string(e["status"].get_string().value_unsafe());
    a.winner = std::string(e["winner"].get_string().value_unsafe());
    a.group = std::stoull(std::string(e["group"].get_string().value_unsafe()));
    a.completeness = e["completeness"].get_double().value_unsafe();
    return a;
  }

  // The embedded run's final answer for every page (its --out file): url -> answer.
  std::map<std::string, Answer> Expected(const std::string& out) {
    std::map<std::string, Answer> m;
    simdjson::dom::parser p;
    std::istringstream in(Read(out));
    for (std::string line; std::getline(in, line);) {
      simdjson::dom::element e;
      if (p.parse(line).get(e) != simdjson::SUCCESS) continue;
      Answer a;
      a.status = std::string(e["status"].get_string().value_unsafe());
      a.winner = std::string(e["winner"].get_string().value_unsafe());
      a.group = e["group"].get_uint64().value_unsafe();
      m[std::string(e["url"].get_string().value_unsafe())] = a;
    }
    return m;
  }

  // How many pages the API answers otherwise than the embedded run (status, group, winner).
  static int Differences(cluster::HttpClient& c, const std::map<std::string, Answer>& expected) {
    int diff = 0;
    for (const auto& [url, want] : expected) {
      const Answer got = Ask(c, url);
      if (got.status != want.status || got.group != want.group || got.winner != want.winner) {
        if (++diff <= 3) ADD_FAILURE() << url << ": " << got.status << " " << got.group << " " << got.winner << " != " << want.status << " " << want.group << " " << want.winner;
      }
    }
    return diff;
  }

  // The embedded run of the sample crawl (batches of 100, 4 shards) into `local`, and a cluster's
  // configuration: batches cut only when the log stays idle 3 s, so both runs batch alike.
  void Embedded() {
    Outcome local = Neardup("--log-level warn run --input " + crawl_ + " --batch 100 --shards 4 --store " + Path("local") +
                            " --out " + Path("local.jsonl"));
    ASSERT_EQ(local.code, 0) << local.err;
    Write("t1.textproto", "tier1_server { linger_ms: 3000 max_batch_delay_ms: 600000 tier2_deadline_ms: 2000 "
                          "retry_min_ms: 100 retry_max_ms: 500 }\n");
  }
  // The crawl's first 500 lines and the rest, written as first.jsonl and second.jsonl.
  std::pair<std::string, std::string> WriteCrawlHalves() {
    std::istringstream lines(Read(crawl_));
    std::string first, second, line;
    for (int n = 0; std::getline(lines, line); ++n) (n < 500 ? first : second) += line + "\n";
    Write("first.jsonl", first);
    Write("second.jsonl", second);
    return {first, second};
  }
  // The API's URL that `cluster up` printed (empty when it printed none): https:// with the
  // cluster's TLS (its default), else http://.
  static std::string ApiOf(const Outcome& up) {
    size_t at = up.out.find("https://");
    if (at == std::string::npos) at = up.out.find("http://");
    if (at == std::string::npos) return "";
    return up.out.substr(at, up.out.find('\n', at) - at);  // the address, to its line's end
  }
  std::vector<std::string> Tier1Args(const std::string& tier2) {
    return {"tier1-server", "--config", Path("t1.textproto"), "--listen", "127.0.0.1:0", "--store", Path("cl"),
            "--map", Path("local/map.pb"), "--batch", "100", "--tier2", tier2};
  }

  // `n` Tier 2 servers (t2-0, t2-1, ...): their host:port, as far as they started.
  std::vector<std::string> StartTier2Servers(int n) {
    std::vector<std::string> servers;
    for (int k = 0; k < n; ++k) {
      const std::string name = "t2-" + std::to_string(k);
      const std::string port = Start(name, {"tier2-server", "--store", Path(name)});
      if (port.empty()) break;
      servers.push_back("127.0.0.1:" + port);
    }
    return servers;
  }

  // Two Tier 2 servers (tier2-a, tier2-b: their ports) and a Tier 1 server over them (Tier1Args;
  // its API's URL), after Embedded().
  struct Cluster {
    std::string a, b, server;
  };
  void StartCluster(Cluster* c) {
    c->a = Start("tier2-a", {"tier2-server", "--store", Path("t2a")});
    c->b = Start("tier2-b", {"tier2-server", "--store", Path("t2b")});
    ASSERT_FALSE(c->a.empty() || c->b.empty());
    const std::string api = Start("tier1", Tier1Args("127.0.0.1:" + c->a + ",127.0.0.1:" + c->b));
    ASSERT_FALSE(api.empty()) << Read(Path("tier1.log"));
    c->server = "http://127.0.0.1:" + api;
  }

  // An eval's lines of the crawler's view and Tier 1's counters (a service's from its /metrics).
  static std::vector<std::string> views(const std::string& out) {
    std::vector<std::string> v;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
      if (line.find("drop precision") != std::string::npos) v.push_back(line);
    }
    return v;
  }

  const std::string crawl_ = std::string(NEARDUP_SOURCE_DIR) + "/data/sample-crawl.jsonl";
};

TEST_F(ServiceTest, IngestOverHttpEndsAsTheEmbeddedRun) {
  Embedded();
  Cluster cl;
  ASSERT_NO_FATAL_FAILURE(StartCluster(&cl));
  const std::string &a = cl.a, &b = cl.b, &server = cl.server;
  Outcome ingest = Neardup("ingest --server " + server + " --input " + crawl_ + " --batch-records 170");
  ASSERT_EQ(ingest.code, 0) << ingest.err;
  EXPECT_NE(ingest.out.find("1000 of 1000 records accepted"), std::string::npos) << ingest.out;
  auto client = cluster::HttpClient::Create(server);
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE(WaitSettled(**client, 60)) << Read(Path("tier1.log"));
  EXPECT_EQ(Metric(**client, "neardup_batches_total"), 10);
  // The loop's counters move with each batch, not only when its run ends (it has not).
  EXPECT_EQ(Metric(**client, "neardup_records_total"), 1000);
  EXPECT_GT(Metric(**client, "neardup_verifications_total"), 0);
  EXPECT_EQ(Differences(**client, Expected(Path("local.jsonl"))), 0);
  Outcome one = Neardup("status --server " + server + " --url https://nocucoos.fr/p/1181");
  EXPECT_EQ(one.code, 0);
  EXPECT_NE(one.out.find("\"status\":\"duplicate\""), std::string::npos) << one.out;
  EXPECT_EQ(Signal("tier1", SIGTERM), 0) << Read(Path("tier1.log"));
  // The groups file of the stopped store: the embedded run's, byte for byte.
  Outcome out = Neardup("--log-level warn run --input " + Path("cl/ingest.jsonl") + " --store " + Path("cl") +
                        " --batch 100 --tier2 127.0.0.1:" + a + ",127.0.0.1:" + b + " --out " + Path("cl.jsonl"));
  ASSERT_EQ(out.code, 0) << out.err;
  EXPECT_EQ(Read(Path("cl.jsonl")), Read(Path("local.jsonl")));
}

// neardup eval --server: the crawl goes through the service's ingest API up to each milestone and
// the answers come from its status API; on the same batches it measures what the embedded eval
// measures (exact routing: the groups do not depend on the map).
TEST_F(ServiceTest, EvalThroughTheServiceMeasuresAsTheEmbeddedEval) {
  Embedded();
  const std::string milestones = " --milestones 50%,100% --batch 100";
  Outcome local = Neardup("--log-level warn eval --input " + crawl_ + milestones + " --shards 4 --out " + Path("ev-local"));
  ASSERT_EQ(local.code, 0) << local.err;
  Cluster cl;
  ASSERT_NO_FATAL_FAILURE(StartCluster(&cl));
  const std::string& server = cl.server;
  EXPECT_EQ(Neardup("eval --input " + crawl_ + milestones + " --server " + server + " --shards 4 --out " + Path("x")).code, 2)
      << "--server excludes --shards";
  Outcome served = Neardup("--log-level warn eval --input " + crawl_ + milestones + " --server " + server + " --out " +
                           Path("ev-served"));
  ASSERT_EQ(served.code, 0) << served.err << Read(Path("tier1.log"));
  EXPECT_EQ(Read(Path("ev-served/table.txt")), Read(Path("ev-local/table.txt")));
  EXPECT_EQ(Read(Path("ev-served/causes.txt")), Read(Path("ev-local/causes.txt")));
  EXPECT_EQ(views(served.out), views(local.out));
  ASSERT_EQ(views(served.out).size(), 2u) << served.out;
  EXPECT_THAT(views(served.out)[1], ::testing::HasSubstr("; Tier 1 resolved ")) << served.out;
  // A service that has taken records already is refused: its answers would not be the replay's.
  Outcome again = Neardup("eval --input " + crawl_ + milestones + " --server " + server + " --out " + Path("ev-again"));
  EXPECT_EQ(again.code, 1);
  EXPECT_THAT(again.err, ::testing::HasSubstr("must start on an empty store")) << again.err;
}

// A WARC crawl through the service: eval --server sends its records as JSON Lines records and
// measures what the embedded eval measures on the WARC itself; `neardup ingest` sends it too.
TEST_F(ServiceTest, AWarcCrawlGoesThroughTheServiceAsItReadsEmbedded) {
  Embedded();
  const std::string warc = std::string(NEARDUP_SOURCE_DIR) + "/data/sample-docs.warc.gz";
  const std::string milestones = " --milestones 50%,100% --batch 100";
  Outcome local = Neardup("--log-level warn eval --input " + warc + milestones + " --shards 4 --out " + Path("ev-local"));
  ASSERT_EQ(local.code, 0) << local.err;
  Cluster cl;
  ASSERT_NO_FATAL_FAILURE(StartCluster(&cl));
  Outcome served = Neardup("--log-level warn eval --input " + warc + milestones + " --server " + cl.server + " --out " +
                           Path("ev-served"));
  ASSERT_EQ(served.code, 0) << served.err << Read(Path("tier1.log"));
  EXPECT_EQ(Read(Path("ev-served/table.txt")), Read(Path("ev-local/table.txt")));
  EXPECT_EQ(Read(Path("ev-served/causes.txt")), Read(Path("ev-local/causes.txt")));
  EXPECT_EQ(views(served.out), views(local.out));
  EXPECT_EQ(views(served.out).size(), 2u) << served.out;
  // The same WARC again through `neardup ingest`: every response record accepted, each unchanged.
  Outcome again = Neardup("ingest --server " + cl.server + " --input " + warc);
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_THAT(again.out, ::testing::HasSubstr("ingest: 203 of 203 records accepted")) << again.out;
  EXPECT_THAT(again.err, ::testing::HasSubstr("203 records")) << again.err;
  auto client = cluster::HttpClient::Create(cl.server);
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE(WaitSettled(**client, 60)) << Read(Path("tier1.log"));
  EXPECT_EQ(Metric(**client, "neardup_records_total"), 406);
  EXPECT_EQ(Metric(**client, "neardup_changed_pages_total"), 0);
}

// Adding a fifth Tier 2 server to a running four-server cluster while ingest goes on, then
// draining it: `neardup rebalance --server` moves cells between the servers, the answers end as
// the embedded run's, and a restart that would seek a shard on another server is refused.
TEST_F(ServiceTest, AddingAndDrainingATier2ServerWhileIngestRuns) {
  Embedded();
  const std::vector<std::string> t2 = StartTier2Servers(5);
  ASSERT_EQ(t2.size(), 5u);
  auto join = [](const std::vector<std::string>& v, size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i) out += (i ? "," : "") + v[i];
    return out;
  };
  const std::string api = Start("tier1", Tier1Args(join(t2, 4)));
  ASSERT_FALSE(api.empty()) << Read(Path("tier1.log"));
  const std::string server = "http://127.0.0.1:" + api;
  WriteCrawlHalves();
  ASSERT_EQ(Neardup("ingest --server " + server + " --input " + Path("first.jsonl")).code, 0);
  auto client = cluster::HttpClient::Create(server);
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE(WaitSettled(**client, 60)) << Read(Path("tier1.log"));

  // A fifth server, while the second half is being ingested.
  Outcome add;
  std::thread rebalance([&] {
    add = Neardup("rebalance --server " + server + " --shards 5 --tier2 " + join(t2, 5) + " --max-move 0.5");
  });
  Outcome ingest = Neardup("ingest --server " + server + " --input " + Path("second.jsonl") + " --batch-records 50");
  rebalance.join();
  ASSERT_EQ(add.code, 0) << add.out << add.err << Read(Path("tier1.log"));
  EXPECT_EQ(ingest.code, 0) << ingest.err;
  EXPECT_THAT(add.out, ::testing::HasSubstr("\"state\":\"done\""));
  EXPECT_THAT(add.out, ::testing::HasSubstr("\"shards_after\":5"));
  EXPECT_THAT(add.out, ::testing::HasSubstr(t2[4]));
  EXPECT_THAT(add.out, ::testing::Not(::testing::HasSubstr("\"pages_moved\":0,")));
  ASSERT_TRUE(WaitSettled(**client, 60)) << Read(Path("tier1.log"));
  EXPECT_EQ(Metric(**client, "neardup_records_total"), 1000);
  EXPECT_EQ(Differences(**client, Expected(Path("local.jsonl"))), 0);
  auto shard_up = [&](int shard) {
    auto r = (*client)->Request("GET", "/metrics", "");
    return r.ok() && r->body.find("neardup_shard_up{shard=\"" + std::to_string(shard) + "\"") != std::string::npos;
  };
  EXPECT_TRUE(shard_up(4));
  EXPECT_EQ(Metric(**client, "neardup_rebalance_running"), 0);
  // A server list that would seek a shard on another server fails, and changes nothing.
  Outcome bad = Neardup("rebalance --server " + server + " --shards 5 --tier2 " + t2[1] + "," + t2[0] + "," + t2[2] +
                        "," + t2[3] + "," + t2[4]);
  EXPECT_EQ(bad.code, 1) << bad.out << bad.err;
  EXPECT_THAT(bad.out, ::testing::HasSubstr("not shards between servers")) << bad.out;

  // Drained again: shard 4 empties into the others, and its server leaves the list.
  Outcome drain = Neardup("rebalance --server " + server + " --shards 4 --tier2 " + join(t2, 4));
  ASSERT_EQ(drain.code, 0) << drain.out << drain.err << Read(Path("tier1.log"));
  EXPECT_THAT(drain.out, ::testing::HasSubstr("\"shards_after\":4"));
  EXPECT_EQ(Differences(**client, Expected(Path("local.jsonl"))), 0);
  EXPECT_FALSE(shard_up(4));
  EXPECT_EQ(Signal("tier1", SIGTERM), 0) << Read(Path("tier1.log"));
  // The store records where its shards are: a start that would seek them elsewhere is refused.
  std::vector<std::string> wrong = Tier1Args(t2[1] + "," + t2[0] + "," + t2[2] + "," + t2[3]);
  std::string cmd;
  for (const std::string& a : wrong) cmd += " " + a;
  Outcome refused = Neardup(cmd);
  EXPECT_NE(refused.code, 0);
  EXPECT_THAT(refused.err, ::testing::HasSubstr("not where --tier2")) << refused.err;
}

// A Tier 1 server killed in the middle of a cluster rebalance's move: a restart with the old
// server list is refused (the store records the move's servers), one with the new list finishes
// the move in its batch loop's first run, and the answers end as the embedded run's.
TEST_F(ServiceTest, ATier1KilledMidRebalanceFinishesTheMoveOnRestart) {
  Embedded();
  const std::vector<std::string> t2 = StartTier2Servers(3);
  ASSERT_EQ(t2.size(), 3u);
  const std::string two = t2[0] + "," + t2[1], three = two + "," + t2[2];
  std::vector<std::string> args = Tier1Args(two);
  Write("t1.textproto", "tier1_server { linger_ms: 300 tier2_deadline_ms: 2000 retry_min_ms: 100 retry_max_ms: 500 }\n");
  // A map of 2 shards for this store: the embedded one has 4.
  ASSERT_EQ(Neardup("partition build --input " + crawl_ + " --shards 2 --out " + Path("map2.pb")).code, 0);
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--map") args[i + 1] = Path("map2.pb");
  }
  std::string api = Start("tier1", args);
  ASSERT_FALSE(api.empty()) << Read(Path("tier1.log"));
  std::string server = "http://127.0.0.1:" + api;
  ASSERT_EQ(Neardup("ingest --server " + server + " --input " + crawl_).code, 0);
  auto client = cluster::HttpClient::Create(server);
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE(WaitSettled(**client, 60)) << Read(Path("tier1.log"));
  std::map<std::string, Answer> before;
  for (const auto& [url, want] : Expected(Path("local.jsonl"))) before[url] = Ask(**client, url);
  // Resident pages summed over the shards, as /metrics gives them.
  auto resident = [&](cluster::HttpClient& c, const std::vector<std::string>& servers) {
    auto r = c.Request("GET", "/metrics", "");
    double sum = 0;
    for (size_t m = 0; r.ok() && m < servers.size(); ++m) {
      const std::string key = "neardup_shard_resident_pages{shard=\"" + std::to_string(m) + "\",server=\"" + servers[m] + "\"} ";
      const size_t at = r->body.find(key);
      if (at == std::string::npos) return -1.0;
      sum += std::strtod(r->body.c_str() + at + key.size(), nullptr);
    }
    return sum;
  };
  const double resident_before = resident(**client, {t2[0], t2[1]});
  ASSERT_GT(resident_before, 0);
  ASSERT_EQ(Signal("tier1", SIGTERM), 0);

  // Killed after the move's third durable step (its journal, then the copy's writes).
  ::setenv("NEARDUP_REBALANCE_KILL_AT", "3", 1);
  api = Start("tier1", args);
  ::unsetenv("NEARDUP_REBALANCE_KILL_AT");
  ASSERT_FALSE(api.empty()) << Read(Path("tier1.log"));
  server = "http://127.0.0.1:" + api;
  Outcome killed = Neardup("rebalance --server " + server + " --shards 3 --tier2 " + three + " --max-move 0.5");
  EXPECT_NE(killed.code, 0) << killed.out;
  EXPECT_EQ(Signal("tier1", SIGKILL), -1);

  std::vector<std::string> old_list = args;
  std::string cmd;
  for (const std::string& a : old_list) cmd += " " + a;
  Outcome refused = Neardup(cmd);
  EXPECT_NE(refused.code, 0);
  EXPECT_THAT(refused.err, ::testing::HasSubstr("not where --tier2")) << refused.err;

  std::vector<std::string> resumed = Tier1Args(three);
  for (size_t i = 0; i + 1 < resumed.size(); ++i) {
    if (resumed[i] == "--map") resumed[i + 1] = Path("map2.pb");
  }
  api = Start("tier1", resumed);
  ASSERT_FALSE(api.empty()) << Read(Path("tier1.log"));
  client = cluster::HttpClient::Create("http://127.0.0.1:" + api);
  ASSERT_TRUE(client.ok());
  // A few new pages, alike to nothing: a batch runs on the three shards (and they say what they hold).
  std::string extra;
  for (int k = 0; k < 3; ++k) {
    extra += "{\"url\":\"https://extra.example/" + std::to_string(k) + "\",\"text\":\"";
    for (int w = 0; w < 60; ++w) extra += "x" + std::to_string(k * 1000 + w * 7) + " ";
    extra += "\"}\n";
  }
  Write("extra.jsonl", extra);
  ASSERT_EQ(Neardup("ingest --server http://127.0.0.1:" + api + " --input " + Path("extra.jsonl")).code, 0);
  ASSERT_TRUE(WaitSettled(**client, 60)) << Read(Path("tier1.log"));
  int differ = 0;
  for (const auto& [url, want] : before) {
    const Answer got = Ask(**client, url);
    differ += got.status != want.status || got.group != want.group || got.winner != want.winner;
  }
  EXPECT_EQ(differ, 0);
  // Every resident page on one shard: nothing lost, nothing held twice.
  EXPECT_EQ(resident(**client, t2), resident_before + 3) << Read(Path("tier1.log"));
  EXPECT_THAT(Read(Path("tier1.log")), ::testing::HasSubstr("stopped mid-move"));
}

TEST_F(ServiceTest, ATier2KilledDuringIngestLeavesPagesPendingAndCostsNothing) {
  Embedded();
  Cluster cl;
  ASSERT_NO_FATAL_FAILURE(StartCluster(&cl));
  const std::string &a = cl.a, &b = cl.b, &server = cl.server;
  auto client = cluster::HttpClient::Create(server);
  ASSERT_TRUE(client.ok());
  // Half the crawl, settled; then Tier 2 server b dies and the other half comes.
  const std::string second = WriteCrawlHalves().second;
  std::string line;
  ASSERT_EQ(Neardup("ingest --server " + server + " --input " + Path("first.jsonl")).code, 0);
  ASSERT_TRUE(WaitSettled(**client, 60));
  EXPECT_EQ(Signal("tier2-b", SIGKILL), -1);
  Outcome ingest = Neardup("ingest --server " + server + " --input " + Path("second.jsonl"));
  ASSERT_EQ(ingest.code, 0) << ingest.err;  // accepted: the log does not need Tier 2
  // The next batch cannot be compared in full: its pages stay pending, saying how complete.
  bool partial = false;
  for (int i = 0; i < 300 && !partial; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
    partial = Metric(**client, "neardup_incomplete_batches_total") >= 1;
  }
  ASSERT_TRUE(partial) << Read(Path("tier1.log"));
  // /metrics tells which shards are down: b serves shards 1 and 3 (shard m on server m % 2).
  auto shard_metric = [&](const char* name, int shard, const std::string& port) {
    return Metric(**client, std::string(name) + "{shard=\"" + std::to_string(shard) + "\",server=\"127.0.0.1:" + port + "\"}");
  };
  EXPECT_EQ(shard_metric("neardup_shard_up", 0, a), 1);
  EXPECT_EQ(shard_metric("neardup_shard_up", 1, b), 0);
  EXPECT_EQ(shard_metric("neardup_shard_up", 3, b), 0);
  EXPECT_GE(shard_metric("neardup_shard_call_failures_total", 1, b), 1);
  EXPECT_GT(shard_metric("neardup_shard_resident_pages", 1, b), 0);  // as it last said
  std::istringstream rest(second);
  int pending = 0, below_one = 0;
  simdjson::dom::parser p;
  for (int i = 0; i < 100 && std::getline(rest, line); ++i) {
    simdjson::dom::element e;
    ASSERT_EQ(p.parse(line).get(e), simdjson::SUCCESS);
    const Answer ans = Ask(**client, std::string(e["url"].get_string().value_unsafe()));
    pending += ans.status == "pending";
    below_one += ans.completeness < 1;
  }
  EXPECT_EQ(pending, 100);
  EXPECT_GT(below_one, 0);
  // Every URL of the second half is pending (a URL recrawled there counts once).
  std::set<std::string> urls;
  std::istringstream again(second);
  while (std::getline(again, line)) {
    simdjson::dom::element e;
    if (p.parse(line).get(e) == simdjson::SUCCESS) urls.insert(std::string(e["url"].get_string().value_unsafe()));
  }
  EXPECT_EQ(Metric(**client, "neardup_pending_pages"), static_cast<double>(urls.size()));
  // Back on its port, with its store: the pending pages complete, as if nothing had happened.
  ASSERT_EQ(Start("tier2-b", {"tier2-server", "--store", Path("t2b"), "--listen", "127.0.0.1:" + b}), b);
  ASSERT_TRUE(WaitSettled(**client, 60)) << Read(Path("tier1.log"));
  EXPECT_EQ(Differences(**client, Expected(Path("local.jsonl"))), 0);
  EXPECT_GE(Metric(**client, "neardup_loop_restarts_total"), 1);
  EXPECT_EQ(shard_metric("neardup_shard_up", 1, b), 1);
  EXPECT_EQ(shard_metric("neardup_shard_up", 3, b), 1);
}

// A Tier 1 server killed (SIGKILL) once some batches have committed and while the records after
// them wait in the log: started again, it decides them as if nothing had happened.
TEST_F(ServiceTest, ATier1KilledLosesNothingItAcknowledged) {
  Embedded();
  const std::string a = Start("tier2-a", {"tier2-server", "--store", Path("t2a")});
  ASSERT_FALSE(a.empty());
  std::vector<std::string> args = Tier1Args("127.0.0.1:" + a);
  std::string api = Start("tier1", args);
  ASSERT_FALSE(api.empty());
  auto client = cluster::HttpClient::Create("http://127.0.0.1:" + api);
  ASSERT_TRUE(client.ok());
  // The first half (5 whole batches of 100: cut as they fill, as the embedded run cuts them), until
  // some of it has committed; then the second half, and the kill as soon as it is acknowledged.
  WriteCrawlHalves();
  ASSERT_EQ(Neardup("ingest --server http://127.0.0.1:" + api + " --input " + Path("first.jsonl")).code, 0);
  double batches = 0;
  for (int i = 0; i < 600 && batches < 2; ++i) {
    batches = Metric(**client, "neardup_batches_total");
    if (batches < 2) std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_GE(batches, 2) << "no batch committed within 60 s\n" << Read(Path("tier1.log"));
  ASSERT_EQ(Neardup("ingest --server http://127.0.0.1:" + api + " --input " + Path("second.jsonl")).code, 0);
  const double committed = Metric(**client, "neardup_records_total");
  const double backlog = Metric(**client, "neardup_ingest_backlog_bytes");
  EXPECT_EQ(Signal("tier1", SIGKILL), -1);
  std::printf("killed with %.0f records committed and %.0f bytes of the log not yet committed\n", committed, backlog);
  // What the kill is meant to find: batches committed, acknowledged records not yet.
  ASSERT_GE(committed, 200);
  ASSERT_LT(committed, 1000);
  ASSERT_GT(backlog, 0);
  api = Start("tier1", args);
  ASSERT_FALSE(api.empty()) << Read(Path("tier1.log"));
  client = cluster::HttpClient::Create("http://127.0.0.1:" + api);
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE(WaitSettled(**client, 60)) << Read(Path("tier1.log"));
  EXPECT_EQ(Differences(**client, Expected(Path("local.jsonl"))), 0);
}

// cluster up starts and supervises the members (a Tier 2 server killed is started again, on its
// address), the crawl ingested through it ends as the embedded run, and cluster down stops them all.
TEST_F(ServiceTest, ClusterUpSupervisesAndClusterDownStops) {
  Embedded();
  Write("cluster.textproto", "cluster { dir: \"" + Path("cl") + "\" tier2_servers: 2 restart_min_ms: 100 }\n"
                             "tier1_server { listen: \"127.0.0.1:0\" map: \"" + Path("local/map.pb") + "\" "
                             "linger_ms: 3000 max_batch_delay_ms: 600000 tier2_deadline_ms: 2000 retry_min_ms: 100 "
                             "retry_max_ms: 500 }\n"
                             "tier2 { batch_pages: 100 }\n");
  Outcome up = Neardup("cluster up --config " + Path("cluster.textproto"));
  ASSERT_EQ(up.code, 0) << up.err << Read(Path("cl/logs/supervisor.log"));
  // The API speaks HTTPS with the cluster's CA (cl/ca.pem), which a client must trust.
  const std::string server = ApiOf(up);
  ASSERT_TRUE(server.starts_with("https://")) << up.out;
  auto client = cluster::HttpClient::Create(server, {.ca_file = Path("cl/ca.pem")});
  ASSERT_TRUE(client.ok());
  auto plain = cluster::HttpClient::Create("http://" + server.substr(8), {.timeout = std::chrono::seconds(5)});
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE((*plain)->Request("GET", "/healthz", "").ok());
  EXPECT_NE(Neardup("status --server " + server + " --url http://a.example/").code, 0);  // the CA not trusted
  EXPECT_EQ(Neardup("status --server " + server + " --ca-file " + Path("cl/ca.pem") + " --url http://a.example/").code, 0);
  // The cluster made its writers' token; the client given the cluster's configuration finds the
  // API, the token and the CA (without the token: refused).
  EXPECT_EQ(std::filesystem::status(Path("cl/token")).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  // Without the token: refused at once, saying so (it was retried for minutes as if the server were down).
  const auto refused_at = std::chrono::steady_clock::now();
  Outcome refused = Neardup("ingest --server " + server + " --ca-file " + Path("cl/ca.pem") + " --input " + crawl_);
  EXPECT_NE(refused.code, 0);
  EXPECT_NE(refused.err.find("401"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("token"), std::string::npos) << refused.err;
  EXPECT_LT(std::chrono::steady_clock::now() - refused_at, std::chrono::seconds(20));
  ASSERT_EQ(Neardup("ingest --config " + Path("cluster.textproto") + " --input " + crawl_).code, 0);
  // A Tier 2 server dies: the supervisor starts it again on its address.
  const std::string view = Read(Path("cl/membership.textproto"));
  const size_t t2 = view.find("name: \"tier2-1\"");
  ASSERT_NE(t2, std::string::npos) << view;
  const size_t pid_at = view.find("pid: ", t2);
  const pid_t pid = static_cast<pid_t>(std::stol(view.substr(pid_at + 5)));
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  ASSERT_TRUE(WaitSettled(**client, 90)) << Read(Path("cl/logs/supervisor.log")) << Read(Path("cl/logs/tier1.log"));
  EXPECT_EQ(Differences(**client, Expected(Path("local.jsonl"))), 0);
  EXPECT_NE(Read(Path("cl/logs/supervisor.log")).find("tier2-1 (pid " + std::to_string(pid) + ") was killed by signal 9"),
            std::string::npos);
  Outcome down = Neardup("cluster down --config " + Path("cluster.textproto"));
  EXPECT_EQ(down.code, 0) << down.err;
  const std::string log = Read(Path("cl/logs/supervisor.log"));
  for (const char* m : {"tier1 stopped (exit 0)", "tier2-0 stopped (exit 0)", "tier2-1 stopped (exit 0)",
                        "cluster: stopped"}) {
    EXPECT_NE(log.find(m), std::string::npos) << m << "\n" << log;
  }
}

// cluster scale on a cluster that cluster up runs (4 Tier 2 servers, one shard each): a fifth
// server is started and takes a shard while the crawl's second half is ingested, then drained and
// stopped; the answers end as the embedded run's, the membership names the servers that serve,
// and the count a later cluster up starts is kept.
TEST_F(ServiceTest, ClusterScaleAddsAndDrainsATier2ServerWhileIngestRuns) {
  Embedded();
  Write("cluster.textproto", "cluster { dir: \"" + Path("cl") + "\" tier2_servers: 4 }\n"
                             "tier1_server { listen: \"127.0.0.1:0\" map: \"" + Path("local/map.pb") + "\" "
                             "linger_ms: 3000 max_batch_delay_ms: 600000 tier2_deadline_ms: 2000 retry_min_ms: 100 "
                             "retry_max_ms: 500 }\n"
                             "tier2 { batch_pages: 100 }\n");
  const std::string config = Path("cluster.textproto");
  Outcome up = Neardup("cluster up --config " + config);
  ASSERT_EQ(up.code, 0) << up.err << Read(Path("cl/logs/supervisor.log"));
  std::string server = ApiOf(up);
  ASSERT_FALSE(server.empty()) << up.out;
  auto client = cluster::HttpClient::Create(server, {.ca_file = Path("cl/ca.pem")});
  ASSERT_TRUE(client.ok());
  WriteCrawlHalves();
  ASSERT_EQ(Neardup("ingest --config " + config + " --input " + Path("first.jsonl")).code, 0);
  ASSERT_TRUE(WaitSettled(**client, 60)) << Read(Path("cl/logs/tier1.log"));
  // Resident pages summed over the shards /metrics names (each page on one shard).
  auto resident = [&](cluster::HttpClient& c) {
    auto r = c.Request("GET", "/metrics", "");
    double sum = 0;
    const std::string key = "\nneardup_shard_resident_pages{";
    for (size_t at = r.ok() ? r->body.find(key) : std::string::npos; at != std::string::npos; at = r->body.find(key, at + 1)) {
      sum += std::strtod(r->body.c_str() + r->body.find("} ", at) + 2, nullptr);
    }
    return sum;
  };
  // The count it has: nothing to do.
  Outcome same = Neardup("cluster scale --config " + config + " --tier2-servers 4");
  EXPECT_EQ(same.code, 0) << same.err;
  EXPECT_EQ(same.out, "{}\n");

  Outcome add;
  std::thread scale([&] { add = Neardup("cluster scale --config " + config + " --tier2-servers 5 --max-move 0.5"); });
  Outcome ingest = Neardup("ingest --config " + config + " --input " + Path("second.jsonl") + " --batch-records 50");
  scale.join();
  ASSERT_EQ(add.code, 0) << add.out << add.err << Read(Path("cl/logs/supervisor.log"));
  EXPECT_EQ(ingest.code, 0) << ingest.err;
  EXPECT_THAT(add.out, ::testing::HasSubstr("\"shards_after\":5"));
  EXPECT_THAT(add.out, ::testing::Not(::testing::HasSubstr("\"pages_moved\":0,")));
  std::string view = Read(Path("cl/membership.textproto"));
  EXPECT_THAT(view, ::testing::HasSubstr("name: \"tier2-4\""));
  EXPECT_EQ(Read(Path("cl/tier2_servers")), "5\n");
  ASSERT_TRUE(WaitSettled(**client, 60)) << Read(Path("cl/logs/tier1.log"));
  EXPECT_EQ(Differences(**client, Expected(Path("local.jsonl"))), 0);

  // Drained: shard 4 empties into the others, and its server is stopped.
  Outcome drain = Neardup("cluster scale --config " + config + " --tier2-servers 4");
  ASSERT_EQ(drain.code, 0) << drain.out << drain.err << Read(Path("cl/logs/supervisor.log"));
  EXPECT_THAT(drain.out, ::testing::HasSubstr("\"shards_after\":4"));
  view = Read(Path("cl/membership.textproto"));
  EXPECT_THAT(view, ::testing::Not(::testing::HasSubstr("name: \"tier2-4\""))) << view;
  EXPECT_THAT(Read(Path("cl/logs/supervisor.log")), ::testing::HasSubstr("tier2-4 stopped (exit 0)"));
  EXPECT_EQ(Read(Path("cl/tier2_servers")), "4\n");
  EXPECT_EQ(Differences(**client, Expected(Path("local.jsonl"))), 0);
  EXPECT_FALSE(std::filesystem::exists(Path("cl/tier2-4")));
  // Added again: the fifth server starts empty (not with the shard it held before the drain).
  const double pages = resident(**client);
  ASSERT_GT(pages, 0);
  Outcome again = Neardup("cluster scale --config " + config + " --tier2-servers 5 --max-move 0.5");
  ASSERT_EQ(again.code, 0) << again.out << again.err << Read(Path("cl/logs/supervisor.log"));
  ASSERT_TRUE(WaitSettled(**client, 60));
  for (int i = 0; i < 100 && resident(**client) != pages; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(resident(**client), pages);
  EXPECT_EQ(Differences(**client, Expected(Path("local.jsonl"))), 0);
  Outcome drained = Neardup("cluster scale --config " + config + " --tier2-servers 4");
  ASSERT_EQ(drained.code, 0) << drained.out << drained.err;
  Outcome down = Neardup("cluster down --config " + config);
  EXPECT_EQ(down.code, 0) << down.err;
  // Up again: the same servers on the same addresses (the store refuses others), the same answers.
  up = Neardup("cluster up --config " + config);
  ASSERT_EQ(up.code, 0) << up.err << Read(Path("cl/logs/supervisor.log")) << Read(Path("cl/logs/tier1.log"));
  server = ApiOf(up);
  client = cluster::HttpClient::Create(server, {.ca_file = Path("cl/ca.pem")});
  ASSERT_TRUE(client.ok());
  EXPECT_EQ(Differences(**client, Expected(Path("local.jsonl"))), 0);
  EXPECT_EQ(Neardup("cluster down --config " + config).code, 0);
}

// `neardup email serve`: emails posted over HTTP become templates that annotate and look-up
// answer; SIGTERM drains clustering and exits 0, and a server started again on the store serves
// the same template at once.
TEST_F(ServiceTest, EmailServeInducesOverHttpAndKeepsItsStore) {
  Write("email.textproto", "email { k: 10 snapshot_refresh_ms: 100 cluster_threads: 0 formation_threads: 0 }\n");
  const std::vector<std::string> args = {"email", "serve", "--store", Path("email"), "--config", Path("email.textproto"),
                                         "--listen", "127.0.0.1:0"};
  std::string port = Start("email", args);
  ASSERT_FALSE(port.empty()) << Read(Path("email.log"));
  auto c = cluster::HttpClient::Create("http://127.0.0.1:" + port);
  ASSERT_TRUE(c.ok());
  std::string body;
  for (const auto& r : email::test::Stream(30, 8)) body += email::test::JsonLine(r);
  auto r = (*c)->Request("POST", "/v1/emails", body);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 202u) << r->body;
  const std::string probe = email::test::JsonLine(email::test::TemplateEmail(2, 90, 700, 1'717'400'000'000));
  std::string id;
  for (int i = 0; i < 200 && id.empty(); ++i) {
    r = (*c)->Request("POST", "/v1/emails/annotate", probe);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->status, 200u) << r->body;
    if (const size_t at = r->body.find("\"template\":\""); at != std::string::npos) id = r->body.substr(at + 12, 16);
    else std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_EQ(id.size(), 16u) << "no template within 20 s: " << r->body;
  r = (*c)->Request("GET", "/v1/templates/" + id, "");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200u);
  const std::string before = r->body;
  EXPECT_NE(before.find("Weekly highlights"), std::string::npos) << before;
  EXPECT_EQ(Signal("email", SIGTERM), 0) << Read(Path("email.log"));

  port = Start("email", args);
  ASSERT_FALSE(port.empty()) << Read(Path("email.log"));
  c = cluster::HttpClient::Create("http://127.0.0.1:" + port);
  ASSERT_TRUE(c.ok());
  r = (*c)->Request("GET", "/v1/templates/" + id, "");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200u) << r->body;
  EXPECT_EQ(Signal("email", SIGTERM), 0);
}

// tier1-server with the email stores configured serves unified threads and domain counts beside
// the crawlers' API, and keeps them across a restart; a threads store without the email store is
// a configuration error naming both fields.
TEST_F(ServiceTest, Tier1ServerServesThreadsAndDomainsWithItsEmailStores) {
  Embedded();
  const std::string a = Start("tier2-a", {"tier2-server", "--store", Path("t2a")});
  ASSERT_FALSE(a.empty());
  Write("bad.textproto", "tier1_server { threads_store: \"" + Path("threads") + "\" }\n");
  Outcome bad = Neardup("tier1-server --config " + Path("bad.textproto") + " --listen 127.0.0.1:0 --store " +
                        Path("cl") + " --map " + Path("local/map.pb") + " --tier2 127.0.0.1:" + a);
  EXPECT_EQ(bad.code, 2) << bad.err;
  EXPECT_NE(bad.err.find("tier1_server.threads_store"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("tier1_server.email_store"), std::string::npos) << bad.err;

  Write("t1.textproto", "tier1_server { email_store: \"" + Path("email") + "\" threads_store: \"" + Path("threads") +
                            "\" domains_store: \"" + Path("domains") + "\" }\n");
  const std::vector<std::string> args = Tier1Args("127.0.0.1:" + a);
  std::string api = Start("tier1", args);
  ASSERT_FALSE(api.empty()) << Read(Path("tier1.log"));
  auto c = cluster::HttpClient::Create("http://127.0.0.1:" + api);
  ASSERT_TRUE(c.ok());
  const std::string threads =
      R"({"gid":"alice","thread":"x","message_id":"<m1@a>","team":"acme"})" "\n"
      R"({"gid":"bob","thread":"y","message_id":"<m1@a>","team":"acme"})" "\n";
  auto r = (*c)->Request("POST", "/v1/threads", threads);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200u) << r->body;
  std::string events = R"({"kind":"team","team":"t1","domains":["acme.com"]})" "\n";
  for (int i = 1; i <= 3; ++i) {
    const std::string u = "u" + std::to_string(i);
    events += R"({"kind":"event","id":"e)" + std::to_string(i) + R"(","type":"joined","team":"t1","user":")" + u +
              R"(","email":")" + u + R"(@partner.com","role":"member"})" "\n";
  }
  r = (*c)->Request("POST", "/v1/domain-events", events);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200u) << r->body;
  EXPECT_EQ(Signal("tier1", SIGTERM), 0) << Read(Path("tier1.log"));

  api = Start("tier1", args);
  ASSERT_FALSE(api.empty()) << Read(Path("tier1.log"));
  c = cluster::HttpClient::Create("http://127.0.0.1:" + api);
  ASSERT_TRUE(c.ok());
  r = (*c)->Request("GET", "/v1/threads?gid=alice&thread=x", "");
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->body.find(R"("threads":["alice:x","bob:y"])"), std::string::npos) << r->body;
  r = (*c)->Request("GET", "/v1/domains/classify?team=t1&inviter=boss@acme.com&invitee=new@partner.com", "");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200u) << r->body;
  EXPECT_NE(r->body.find(R"("members":3)"), std::string::npos) << r->body;
  r = (*c)->Request("GET", "/v1/status?url=https://nocucoos.fr/p/1181", "");  // the crawlers' API beside them
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200u) << r->body;
  EXPECT_EQ(Signal("tier1", SIGTERM), 0) << Read(Path("tier1.log"));
}

}  // namespace
}  // namespace neardup
