// A new cluster needs no map: `neardup cluster up` with the local configuration (configs/
// local-cluster.textproto, its directory and API port moved into the test's) and no map.pb takes
// a generated crawl, builds its store's map from the first records and decides every page within a
// bounded time; its groups equal `neardup run` over the same crawl with that map. The service cuts
// its batches as the records arrive, the run by the file's size: with a URL crawled twice, where
// the batches are cut may change a group (the fast path compares a changed page with its winner as
// the batch starts, and a rewrite does not take back a join made through it: tier1/README.md,
// Input order), so the crawl keeps each URL's first record, and then the groups must be equal.
// The seed is printed; NEARDUP_BOOTSTRAP_SEED=S runs another.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <simdjson.h>

#include "cluster/http/http_client.h"
#include "tests/process_test.h"

namespace neardup {
namespace {

using std::chrono::milliseconds;
using Groups = std::set<std::set<std::string>>;

class BootstrapMapTest : public ProcessTest {
 protected:
  void TearDown() override {
    StopLeftoverCluster(Path("cl"), Path("cluster.textproto"));
    ProcessTest::TearDown();
  }

  // A metric's value from /metrics (-1 when absent or unreachable).
  static double Metric(cluster::HttpClient& c, const std::string& name) {
    auto r = c.Request("GET", "/metrics", "");
    if (!r.ok()) return -1;
    const size_t at = r->body.find("\n" + name + " ");
    if (at == std::string::npos) return -1;
    return std::strtod(r->body.c_str() + at + name.size() + 2, nullptr);
  }

  // A page's status and group from the API ("" when it does not answer).
  static std::pair<std::string, uint64_t> Ask(cluster::HttpClient& c, const std::string& url) {
    auto r = c.Request("GET", "/v1/status?url=" + cluster::UrlEncode(url), "");
    if (!r.ok() || r->status != 200) return {"", 0};
    simdjson::dom::parser p;
    simdjson::dom::element e;
    if (p.parse(r->body).get(e) != simdjson::SUCCESS) return {"", 0};
    return {std::string(e["status"].get_string().value_unsafe()),
            std::stoull(std::string(e["group"].get_string().value_unsafe()))};
  }

  static Groups AsGroups(const std::map<uint64_t, std::set<std::string>>& by_id) {
    Groups g;
    for (const auto& [id, members] : by_id) g.insert(members);
    return g;
  }
};

TEST_F(BootstrapMapTest, ClusterUpWithoutAMapDecidesEveryPageAsRunDoesWithItsMap) {
#ifdef NEARDUP_SLOW
  uint64_t records = 6000;
#else
  uint64_t records = 23000;
#endif
  uint64_t seed = 11;
  if (const char* s = std::getenv("NEARDUP_BOOTSTRAP_SEED"); s != nullptr && *s != '\0') seed = std::strtoull(s, nullptr, 10);
  std::printf("BootstrapMapTest: gen-crawl --pages %llu --seed %llu (NEARDUP_BOOTSTRAP_SEED=S for another)\n",
              static_cast<unsigned long long>(records), static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  ASSERT_EQ(Neardup("gen-crawl --pages " + std::to_string(records) + " --seed " + std::to_string(seed) + " --out " +
                    Path("generated.jsonl")).code, 0);
  // Each URL's first record only (about 20,000 of 23,000).
  const std::string crawl = Path("crawl.jsonl");
  {
    std::istringstream lines(Read(Path("generated.jsonl")));
    std::set<std::string> seen;
    std::string kept;
    records = 0;
    for (std::string line; std::getline(lines, line);) {
      const size_t u = line.find("\"url\":\"") + 7;
      if (seen.insert(line.substr(u, line.find('"', u) - u)).second) kept += line + "\n", ++records;
    }
    Write("crawl.jsonl", kept);
  }
  // The local configuration, its directory and API port the test's own.
  std::string config = Read(std::string(NEARDUP_SOURCE_DIR) + "/configs/local-cluster.textproto");
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"dir: \"neardup-cluster\"", "dir: \"" + Path("cl") + "\""},
                                 {"listen: \"127.0.0.1:8080\"", "listen: \"127.0.0.1:0\""}}) {
    const size_t at = config.find(from);
    ASSERT_NE(at, std::string::npos) << from << " is not in configs/local-cluster.textproto";
    config.replace(at, from.size(), to);
  }
  Write("cluster.textproto", config);
  const std::string cfg = Path("cluster.textproto");
  Outcome up = Neardup("cluster up --config " + cfg);
  ASSERT_EQ(up.code, 0) << up.err << Read(Path("cl/logs/supervisor.log")) << Read(Path("cl/logs/tier1.log"));
  // The API speaks HTTPS with the cluster's CA (the local configuration's default).
  const size_t https = up.out.find("https://");
  ASSERT_NE(https, std::string::npos) << up.out;
  auto client = cluster::HttpClient::Create(up.out.substr(https, up.out.find('\n', https) - https),
                                            {.ca_file = Path("cl/ca.pem")});
  ASSERT_TRUE(client.ok());
  // Healthy, and saying that its map is not built yet.
  auto health = (*client)->Request("GET", "/healthz", "");
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(health->status, 200);
  EXPECT_THAT(health->body, ::testing::HasSubstr("\"map\":\"building\""));

  Outcome ingest = Neardup("ingest --config " + cfg + " --input " + crawl);
  ASSERT_EQ(ingest.code, 0) << ingest.err;
  // Every page decided within a bounded time: nothing pending, the backlog committed.
  bool settled = false;
  const auto start = std::chrono::steady_clock::now();
  while (!settled && std::chrono::steady_clock::now() - start < std::chrono::seconds(120)) {
    settled = Metric(**client, "neardup_records_total") == static_cast<double>(records) &&
              Metric(**client, "neardup_pending_pages") == 0 && Metric(**client, "neardup_ingest_backlog_bytes") == 0;
    if (!settled) std::this_thread::sleep_for(milliseconds(200));
  }
  ASSERT_TRUE(settled) << "pending " << Metric(**client, "neardup_pending_pages") << "\n" << Read(Path("cl/logs/tier1.log"));
  std::printf("BootstrapMapTest: %llu records decided %.1f s after their ingest\n", static_cast<unsigned long long>(records),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  health = (*client)->Request("GET", "/healthz", "");
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(health->body, "{\"status\":\"ok\"}\n");
  // The store's map: one shard per Tier 2 server, each named in the membership.
  const std::string map = Path("cl/tier1/map.pb");
  ASSERT_TRUE(std::filesystem::exists(map));
  std::string view;
  for (int i = 0; i < 50 && view.find("shards: 3") == std::string::npos; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
    view = Read(Path("cl/membership.textproto"));
  }
  for (int m = 0; m < 4; ++m) {
    EXPECT_THAT(view, ::testing::HasSubstr("name: \"tier2-" + std::to_string(m) + "\"\n  role: \"tier2\"\n  address:"));
    EXPECT_THAT(view, ::testing::HasSubstr("shards: " + std::to_string(m) + "\n")) << view;
  }
  EXPECT_THAT(view, ::testing::HasSubstr("map_generation: 1"));
  EXPECT_THAT(Read(Path("cl/logs/tier1.log")), ::testing::HasSubstr("pipeline: partition map from "));

  // The embedded run over the same crawl with the store's map. The batches differ (the service
  // cuts them as records arrive), which may change winners and statuses (tier1/README.md, Input
  // order) but not the groups: those must be equal.
  Outcome run = Neardup("--log-level warn run --input " + crawl + " --map " + map + " --shards 4 --store " + Path("local") +
                        " --out " + Path("local.jsonl"));
  ASSERT_EQ(run.code, 0) << run.err;
  std::map<uint64_t, std::set<std::string>> want, got;
  std::istringstream in(Read(Path("local.jsonl")));
  simdjson::dom::parser p;
  uint64_t pages = 0, pending = 0, unanswered = 0;
  for (std::string line; std::getline(in, line);) {
    simdjson::dom::element e;
    ASSERT_EQ(p.parse(line).get(e), simdjson::SUCCESS) << line;
    const std::string url(e["url"].get_string().value_unsafe());
    const uint64_t group = e["group"].get_uint64().value_unsafe();
    const auto [status, service_group] = Ask(**client, url);
    ++pages;
    pending += status == "pending";
    unanswered += status.empty();
    if (group != 0) want[group].insert(url);
    if (service_group != 0) got[service_group].insert(url);
  }
  EXPECT_GT(pages, records / 2);
  EXPECT_EQ(pending, 0u);
  EXPECT_EQ(unanswered, 0u);
  const Groups w = AsGroups(want), g = AsGroups(got);
  EXPECT_GT(w.size(), pages / 10);
  EXPECT_EQ(g.size(), w.size());
  int shown = 0;
  for (const auto& members : w) {
    if (g.count(members) || ++shown > 3) continue;
    std::string text;
    for (const std::string& u : members) text += " " + u;
    ADD_FAILURE() << "a group of the run the service does not have:" << text;
  }
  for (const auto& members : g) {
    if (w.count(members) || ++shown > 6) continue;
    std::string text;
    for (const std::string& u : members) text += " " + u;
    ADD_FAILURE() << "a group of the service the run does not have:" << text;
  }
  EXPECT_EQ(Neardup("cluster down --config " + cfg).code, 0);
}

}  // namespace
}  // namespace neardup
