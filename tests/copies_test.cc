// A crawl of copies through the cluster service, end to end, in processes on loopback (two Tier 2
// servers, a Tier 1 server): one authorized POST of N identical one-word pages (parked domains)
// with a soft-404 family among them (N / 40 pages of 203 words that differ in one, a record in 41).
// As the copies become resident the batch loop keeps its rate: the last quarter of the records is
// decided at least a third as fast as the first (without tier2.max_matches_per_page each compare
// verifies every resident copy, and the loop stalls past its Tier 2 deadline); it never restarts,
// /healthz answers 200 throughout, and the copies end in one group, the family in another.
//
// N: 200,000 (about 15 s in a release build); 20,000 under the sanitizers (NEARDUP_SLOW); the
// environment variable NEARDUP_COPIES sets it. Every wait is bounded.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <simdjson.h>

#include "cluster/http/http_client.h"
#include "tests/process_test.h"

extern char** environ;

namespace neardup {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

#ifdef NEARDUP_SLOW
constexpr uint64_t kDefaultCopies = 20000;
#else
constexpr uint64_t kDefaultCopies = 200000;
#endif

class CopiesTest : public ProcessTest {
 protected:
  // A metric's value in a /metrics body (-1 when absent).
  static double Metric(const std::string& body, const std::string& name) {
    const size_t at = body.find("\n" + name + " ");
    if (at == std::string::npos) return -1;
    return std::strtod(body.c_str() + at + name.size() + 2, nullptr);
  }

  // The group and status the API answers for `url` (group 0 when it cannot).
  static std::pair<uint64_t, std::string> Ask(cluster::HttpClient& c, const std::string& url) {
    auto r = c.Request("GET", "/v1/status?url=" + cluster::UrlEncode(url), "");
    if (!r.ok() || r->status != 200) return {0, ""};
    simdjson::dom::parser p;
    simdjson::dom::element e;
    if (p.parse(r->body).get(e) != simdjson::SUCCESS) return {0, ""};
    return {std::stoull(std::string(e["group"].get_string().value_unsafe())),
            std::string(e["status"].get_string().value_unsafe())};
  }

};

// `prefix` + n + `suffix` (GCC 12 warns falsely on const char* + std::to_string()).
std::string Name(std::string prefix, uint64_t n, const char* suffix = "") {
  prefix += std::to_string(n);
  prefix += suffix;
  return prefix;
}
std::string Copy(uint64_t i) { return Name("http://parked-", i, ".example/"); }
std::string Soft404(uint64_t i) { return Name("http://soft404.example/p/", i); }

TEST_F(CopiesTest, ACrawlOfCopiesKeepsTheBatchLoopsRate) {
  uint64_t copies = kDefaultCopies;
  if (const char* n = std::getenv("NEARDUP_COPIES")) copies = std::strtoull(n, nullptr, 10);
  ASSERT_GE(copies, 4000u) << "NEARDUP_COPIES: at least 4000";
  const uint64_t family = copies / 40, total = copies + family;
  // The soft-404 page: a template of 200 words with the requested path in it, so any two pages of
  // the family share all but the 5 shingles of that word (Jaccard 0.95).
  std::string before, after;
  for (int w = 0; w < 100; ++w) before += Name("w", w * 7 % 101, " ");
  for (int w = 100; w < 200; ++w) after += Name(" t", w * 13 % 211);
  auto soft404 = [&](uint64_t f) {
    return "{\"url\":\"" + Soft404(f) + "\",\"text\":\"Not found " + before + Name("path", f) + after + "\"}\n";
  };
  std::string crawl;
  crawl.reserve(total * 80 + family * 1400);
  for (uint64_t r = 0, c = 0, f = 0; r < total; ++r) {
    if ((r % 41 == 40 && f < family) || c == copies) {
      crawl += soft404(f++);
    } else {
      crawl += "{\"url\":\"" + Copy(c++) + "\",\"text\":\"parked\"}\n";
    }
  }
  Write("crawl.jsonl", crawl);
  Outcome map = Neardup("--log-level warn partition build --input " + Path("crawl.jsonl") +
                        " --dims 3 --shards 2 --threshold 0.9 --out " + Path("map.pb") + " --report " + Path("r.json"));
  ASSERT_EQ(map.code, 0) << map.err;
  // A Tier 2 deadline of 5 s: a compare that stalls shows in seconds (the default is 30).
  Write("t1.textproto", "tier1_server { bearer_token: \"copies\" tier2_deadline_ms: 5000 }\n");
  const std::string a = Start("t2-a", {"tier2-server", "--store", Path("t2a")});
  const std::string b = Start("t2-b", {"tier2-server", "--store", Path("t2b")});
  ASSERT_FALSE(a.empty() || b.empty());
  const std::string api = Start("tier1", {"tier1-server", "--config", Path("t1.textproto"), "--listen", "127.0.0.1:0",
                                          "--store", Path("store"), "--map", Path("map.pb"), "--tier2",
                                          "127.0.0.1:" + a + ",127.0.0.1:" + b});
  ASSERT_FALSE(api.empty()) << Read(Path("tier1.log"));
  auto client = cluster::HttpClient::Create("http://127.0.0.1:" + api, {.timeout = std::chrono::seconds(60)});
  ASSERT_TRUE(client.ok());
  auto posted = (*client)->Request("POST", "/v1/pages", crawl, {{"Authorization", "Bearer copies"}});
  ASSERT_TRUE(posted.ok()) << posted.status().ToString();
  ASSERT_EQ(posted->status, 202u) << posted->body;  // accepted whole, durably

  // Records decided over time, until all are (or the time is up).
  struct Sample {
    double seconds;
    double records;
  };
  std::vector<Sample> samples;
  int unhealthy = 0;
  double restarts = 0;
  const auto t0 = Clock::now();
#ifdef NEARDUP_SLOW
  const double limit = 600;
#else
  const double limit = 120;
#endif
  for (;;) {
    const double now = std::chrono::duration<double>(Clock::now() - t0).count();
    auto m = (*client)->Request("GET", "/metrics", "");
    ASSERT_TRUE(m.ok() && m->status == 200);
    samples.push_back({now, Metric(m->body, "neardup_records_total")});
    restarts = Metric(m->body, "neardup_loop_restarts_total");
    auto h = (*client)->Request("GET", "/healthz", "");
    unhealthy += !h.ok() || h->status != 200;
    if (samples.back().records >= static_cast<double>(total) || now > limit) break;
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_EQ(samples.back().records, static_cast<double>(total))
      << "records decided in " << limit << " s; the loop restarted " << restarts << " times\n"
      << Read(Path("tier1.log")).substr(0, 4000);
  EXPECT_EQ(restarts, 0) << Read(Path("tier1.log")).substr(0, 4000);
  EXPECT_EQ(unhealthy, 0);

  // The rate of each quarter of the records: the first sample past each quarter's end.
  std::vector<Sample> at = {samples.front()};
  for (int q = 1; q <= 4; ++q) {
    for (const Sample& s : samples) {
      if (s.records >= static_cast<double>(total) * q / 4) {
        at.push_back(s);
        break;
      }
    }
  }
  ASSERT_EQ(at.size(), 5u);
  std::vector<double> rate;
  for (int q = 0; q < 4; ++q) {
    rate.push_back((at[q + 1].records - at[q].records) / std::max(at[q + 1].seconds - at[q].seconds, 0.02));
  }
  std::printf("%llu records (%llu copies, a soft-404 family of %llu) decided in %.1f s; records/s by quarter: "
              "%.0f %.0f %.0f %.0f\n",
              static_cast<unsigned long long>(total), static_cast<unsigned long long>(copies),
              static_cast<unsigned long long>(family), samples.back().seconds, rate[0], rate[1], rate[2], rate[3]);
  EXPECT_GE(rate[3], rate[0] / 3) << "the loop slows down as copies become resident";

  // The copies are one group, the family another.
  const auto first = Ask(**client, Copy(0));
  EXPECT_NE(first.first, 0u);
  EXPECT_EQ(first.second, "winner");
  for (uint64_t i : {uint64_t{1}, copies / 2, copies - 1}) {
    EXPECT_EQ(Ask(**client, Copy(i)), std::make_pair(first.first, std::string("duplicate"))) << Copy(i);
  }
  const auto soft = Ask(**client, Soft404(0));
  EXPECT_NE(soft.first, 0u);
  EXPECT_NE(soft.first, first.first);
  for (uint64_t i : {uint64_t{1}, family / 2, family - 1}) {
    EXPECT_EQ(Ask(**client, Soft404(i)).first, soft.first) << Soft404(i);
  }
}

}  // namespace
}  // namespace neardup
