// End-to-end tests of the neardup binary: real processes, real files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "baseline/all_pairs.h"
#include "document/crawl_reader.h"
#include "document/html_text.h"
#include "document/shingle.h"
#include "document/signature.h"
#include "tests/binary_test.h"

namespace neardup {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;


class CliTest : public BinaryTest {
 protected:
  // url -> group id from a groups.jsonl file.
  static std::map<std::string, int64_t> Groups(const std::string& path) {
    std::map<std::string, int64_t> g;
    simdjson::dom::parser parser;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      simdjson::dom::element e = parser.parse(line);
      g[std::string(std::string_view(e["url"]))] = int64_t(e["group"]);
    }
    return g;
  }
};

std::string Words(int from, int n) {
  std::string s;
  for (int i = from; i < from + n; ++i) s.append("word").append(std::to_string(i)).append(" ");
  return s;
}

TEST_F(CliTest, BaselineGroupsDuplicatesRedirectsAndRecrawls) {
  const std::string a = Words(0, 100), b = Words(1000, 100), c = Words(5000, 40);
  std::string crawl;
  crawl += "{\"url\":\"http://a.example/\",\"text\":\"" + a + "\",\"popularity\":3}\n";
  crawl += "{\"url\":\"http://mirror.example/a\",\"html\":\"<html><script>var x=1;</script><p>" + a + "</p></html>\"}\n";
  crawl += "{\"url\":\"http://b.example/\",\"text\":\"" + b + "\"}\n";
  crawl += "this line is broken\n";
  crawl += "{\"url\":\"http://r1.example/\",\"redirect_to\":\"http://r2.example/\"}\n";
  crawl += "{\"url\":\"http://r2.example/\",\"redirect_to\":\"http://b.example/\"}\n";
  crawl += "{\"url\":\"http://cyc1.example/\",\"redirect_to\":\"http://cyc2.example/\"}\n";
  crawl += "{\"url\":\"http://cyc2.example/\",\"redirect_to\":\"http://cyc1.example/\"}\n";
  crawl += "{\"url\":\"http://self.example/\",\"redirect_to\":\"http://self.example/\"}\n";
  crawl += "{\"url\":\"http://c.example/\",\"text\":\"" + a + "\"}\n";   // first a copy of a ...
  crawl += "{\"url\":\"http://c.example/\",\"text\":\"" + c + "\"}\n";   // ... then rewritten
  crawl += "{\"url\":\"http://empty.example/\",\"html\":\"<script>only()</script>\"}\n";
  crawl += "{\"url\":\"http://empty2.example/\",\"text\":\"\"}\n";
  Write("crawl.jsonl", crawl);
  const Outcome r = Neardup("baseline --input " + Path("crawl.jsonl") + " --threshold 0.9 --pairs " + Path("pairs.jsonl") +
                        " --groups " + Path("groups.jsonl"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("line 4"));
  EXPECT_THAT(r.err, HasSubstr("1 bad lines skipped"));
  EXPECT_THAT(r.err, HasSubstr("2 redirect cycles"));
  const auto g = Groups(Path("groups.jsonl"));
  ASSERT_EQ(g.size(), 11u);  // every crawled URL once; redirect targets without records are not listed
  EXPECT_EQ(g.at("http://a.example/"), g.at("http://mirror.example/a"));
  EXPECT_EQ(g.at("http://r1.example/"), g.at("http://b.example/"));
  EXPECT_EQ(g.at("http://r2.example/"), g.at("http://b.example/"));
  EXPECT_EQ(g.at("http://cyc1.example/"), g.at("http://cyc2.example/"));
  EXPECT_NE(g.at("http://c.example/"), g.at("http://a.example/"));  // the recrawl replaced the copy
  EXPECT_NE(g.at("http://empty.example/"), g.at("http://empty2.example/"));  // empty pages never match
  EXPECT_NE(g.at("http://a.example/"), g.at("http://b.example/"));
  std::set<int64_t> ids;
  for (const auto& [u, id] : g) ids.insert(id);
  EXPECT_EQ(ids.size(), 7u);
  EXPECT_EQ(Read(Path("pairs.jsonl")),
            "{\"a\":\"http://a.example/\",\"b\":\"http://mirror.example/a\",\"similarity\":1}\n");
}

TEST_F(CliTest, ExtractWritesTheTextTheRunWouldSign) {
  // HTML becomes its visible text; text, redirects and gone pages pass through; the baseline on
  // the extract groups exactly as on the crawl.
  const std::string a = Words(0, 100), b = Words(1000, 100);
  std::string crawl;
  crawl += "{\"url\":\"http://a.example/\",\"html\":\"<html><head><title>T</title><script>var x=1;</script></head><body><p>" + a +
           "</p></body></html>\",\"fetched_at\":\"2024-06-03T00:09:48Z\",\"market\":\"uk\",\"popularity\":3}\n";
  crawl += "{\"url\":\"http://mirror.example/a\",\"text\":\"" + a + "\"}\n";
  crawl += "{\"url\":\"http://b.example/\",\"html\":\"<div>" + b + "</div>\"}\n";
  crawl += "not json\n";
  crawl += "{\"url\":\"http://r.example/\",\"redirect_to\":\"http://b.example/\"}\n";
  crawl += "{\"url\":\"http://gone.example/\",\"gone\":true}\n";
  Write("crawl.jsonl", crawl);
  const Outcome r = Neardup("extract --input " + Path("crawl.jsonl") + " --out " + Path("text.jsonl"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("line 4"));
  const std::string text = Read(Path("text.jsonl"));
  EXPECT_THAT(text, HasSubstr("{\"url\":\"http://a.example/\",\"text\":\""));
  EXPECT_THAT(text, HasSubstr("\"fetched_at\":\"2024-06-03T00:09:48Z\",\"market\":\"uk\",\"popularity\":3}"));
  EXPECT_THAT(text, Not(HasSubstr("var x")));
  EXPECT_THAT(text, Not(HasSubstr("<p>")));
  EXPECT_THAT(text, HasSubstr("{\"url\":\"http://r.example/\",\"redirect_to\":\"http://b.example/\"}"));
  EXPECT_THAT(text, HasSubstr("{\"url\":\"http://gone.example/\",\"gone\":true}"));
  std::vector<CrawlRecord> records;
  {
    auto reader = CrawlReader::Open(Path("text.jsonl"), {});
    ASSERT_TRUE(reader.ok());
    CrawlRecord rec;
    while ((*reader)->Next(&rec)) records.push_back(rec);
    EXPECT_EQ((*reader)->stats().bad_lines, 0u);
  }
  ASSERT_EQ(records.size(), 5u);
  EXPECT_FALSE(records[0].is_html);
  ASSERT_EQ(Neardup("baseline --input " + Path("crawl.jsonl") + " --groups " + Path("g1.jsonl")).code, 0);
  ASSERT_EQ(Neardup("baseline --input " + Path("text.jsonl") + " --groups " + Path("g2.jsonl")).code, 0);
  EXPECT_EQ(Groups(Path("g1.jsonl")), Groups(Path("g2.jsonl")));
  EXPECT_EQ(Neardup("extract --input " + Path("missing.jsonl") + " --out " + Path("x.jsonl")).code, 1);
}

TEST_F(CliTest, BadConfigIsRefusedWithLineAndColumn) {
  Write("bad.textproto", "shingle {\n  k: 5\n  dimz: 3\n}\n");
  Write("crawl.jsonl", "{\"url\":\"http://a.example/\",\"text\":\"x\"}\n");
  Outcome r = Neardup("baseline --input " + Path("crawl.jsonl") + " --config " + Path("bad.textproto"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(Path("bad.textproto") + ":3:"));
  EXPECT_THAT(r.err, HasSubstr("dimz"));
  r = Neardup("config check " + Path("bad.textproto"));
  EXPECT_EQ(r.code, 2);
  r = Neardup(std::string("config check ") + NEARDUP_SOURCE_DIR + "/configs/embedded.textproto");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("OK"));
}

TEST_F(CliTest, BadFlagsAreRefused) {
  Write("crawl.jsonl", "{\"url\":\"http://a.example/\",\"text\":\"x\"}\n");
  EXPECT_EQ(Neardup("baseline --input " + Path("crawl.jsonl") + " --threshold 1.5").code, 2);
  EXPECT_EQ(Neardup("baseline --input " + Path("crawl.jsonl") + " --shingle-k 0").code, 2);
  EXPECT_EQ(Neardup("--log-level loud baseline --input " + Path("crawl.jsonl")).code, 2);
  EXPECT_EQ(Neardup("baseline --no-such-flag").code, 2) << "a flag CLI11 itself refuses is bad usage too";
  EXPECT_EQ(Neardup("--help").code, 0);
  const Outcome r = Neardup("baseline --input " + Path("missing.jsonl"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("missing.jsonl"));
}

// A server that anyone on the network can reach needs both HTTPS and a writers' token: without
// either it refuses to start, naming what is missing (and never binds a port beyond loopback).
TEST_F(CliTest, ServersRefuseToListenBeyondLoopbackWithoutHttpsAndAToken) {
  ASSERT_EQ(Neardup("certs init --dir " + Path("certs") + " --hosts 127.0.0.1").code, 0);
  Write("token", "a-token-of-the-writers\n");
  fs::permissions(Path("token"), fs::perms::owner_read | fs::perms::owner_write);
  const std::string t1 = "tier1-server --listen 0.0.0.0:0 --store " + Path("store");
  Outcome r = Neardup(t1);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("needs HTTPS (tier1_server.tls or --tls-dir) and a bearer token"));
  r = Neardup(t1 + " --bearer-token-file " + Path("token"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("needs HTTPS"));
  EXPECT_THAT(r.err, Not(HasSubstr("bearer token")));
  r = Neardup(t1 + " --tls-dir " + Path("certs"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("needs a bearer token"));
  r = Neardup(t1 + " --tls-dir " + Path("nowhere") + " --bearer-token-file " + Path("token"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("nowhere/member.pem does not exist"));
  r = Neardup("email serve --listen 0.0.0.0:0 --store " + Path("email") + " --bearer-token-file " + Path("token"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("needs HTTPS (--tls-dir)"));
  EXPECT_FALSE(fs::exists(Path("store") + "/ingest.jsonl"));  // refused before the store was opened
}

TEST_F(CliTest, GenCrawlIsDeterministic) {
  ASSERT_EQ(Neardup("gen-crawl --pages 500 --seed 4 --out " + Path("a.jsonl") + " --truth " + Path("t.jsonl")).code, 0);
  ASSERT_EQ(Neardup("gen-crawl --pages 500 --seed 4 --out " + Path("b.jsonl")).code, 0);
  ASSERT_EQ(Neardup("gen-crawl --pages 500 --seed 5 --out " + Path("c.jsonl")).code, 0);
  EXPECT_EQ(Read(Path("a.jsonl")), Read(Path("b.jsonl")));
  EXPECT_NE(Read(Path("a.jsonl")), Read(Path("c.jsonl")));
  EXPECT_EQ(Neardup("gen-crawl --pages 0 --out " + Path("d.jsonl")).code, 2);
}

// The baseline binary against an independent brute-force computation over the same crawl:
// last version per URL, all pairs compared by merge.
TEST_F(CliTest, BaselineEqualsBruteForceOnGeneratedCrawl) {
  ASSERT_EQ(Neardup("gen-crawl --pages 2500 --seed 21 --out " + Path("crawl.jsonl")).code, 0);
  auto extractor = HtmlToText::Create();
  ASSERT_TRUE(extractor.ok());
  std::unordered_map<std::string, size_t> index;
  std::vector<std::string> urls;
  std::vector<std::vector<uint64_t>> sets;
  {
    auto reader = CrawlReader::Open(Path("crawl.jsonl"), {});
    ASSERT_TRUE(reader.ok());
    CrawlRecord rec;
    Signer signer({});
    PageFeatures f;
    std::string text;
    while ((*reader)->Next(&rec)) {
      auto [it, inserted] = index.try_emplace(rec.url, urls.size());
      if (inserted) { urls.push_back(rec.url); sets.emplace_back(); }
      if (rec.is_redirect()) { sets[it->second].clear(); continue; }
      if (rec.is_html) { ASSERT_TRUE((*extractor)->Extract(rec.body, &text).ok()); } else { text = rec.body; }
      signer.Sign(text, &f);
      sets[it->second] = f.shingles;
    }
    ASSERT_EQ((*reader)->stats().bad_lines, 0u);
  }
  const auto all = baseline::BruteForceAllPairs(sets, 0.5);  // filtered per threshold below
  for (double t : {0.5, 0.8, 0.9}) {
    std::set<std::pair<std::string, std::string>> expected;
    // Unordered pairs: the binary orders a pair by first mention (redirect targets included).
    auto pair_of = [](std::string a, std::string b) { return a < b ? std::pair(a, b) : std::pair(b, a); };
    for (const auto& p : all) {
      const size_t o = Overlap(sets[p.a], sets[p.b]);
      if (JaccardAtLeast(o, sets[p.a].size(), sets[p.b].size(), t)) expected.insert(pair_of(urls[p.a], urls[p.b]));
    }
    const std::string pairs = Path("pairs.jsonl");
    const Outcome r = Neardup("baseline --input " + Path("crawl.jsonl") + " --threshold " + std::to_string(t) +
                          " --pairs " + pairs);
    ASSERT_EQ(r.code, 0) << r.err;
    std::set<std::pair<std::string, std::string>> got;
    simdjson::dom::parser parser;
    std::ifstream in(pairs);
    std::string line;
    while (std::getline(in, line)) {
      simdjson::dom::element e = parser.parse(line);
      got.insert(pair_of(std::string(std::string_view(e["a"])), std::string(std::string_view(e["b"]))));
    }
    EXPECT_EQ(got, expected) << "threshold " << t;
    EXPECT_GT(expected.size(), 50u) << "the generated crawl should hold near-duplicates at " << t;
  }
}

TEST_F(CliTest, PartitionBuildRouteAndRebalance) {
  ASSERT_EQ(Neardup("gen-crawl --pages 3000 --seed 8 --out " + Path("crawl.jsonl")).code, 0);
  ASSERT_EQ(Neardup("gen-crawl --pages 3000 --seed 9 --out " + Path("fresh.jsonl")).code, 0);
  Outcome r = Neardup("partition build --input " + Path("crawl.jsonl") + " --shards 8 --out " + Path("map.pb") +
                      " --report " + Path("report.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element rep = parser.load(Path("report.json"));
  EXPECT_EQ(int64_t(rep["machines"]), 8);
  EXPECT_EQ(std::string_view(rep["routing"]), "exact");
  const double imbalance = double(rep["sample"]["imbalance"]);
  EXPECT_GE(imbalance, 1.0);
  EXPECT_LT(imbalance, 1.5);
  EXPECT_EQ(simdjson::dom::array(rep["sample"]["pages_per_machine"]).size(), 8u);

  r = Neardup("partition route --map " + Path("map.pb") + " --input " + Path("crawl.jsonl"));
  ASSERT_EQ(r.code, 0) << r.err;
  size_t routed = 0;
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    simdjson::dom::element e = parser.parse(line);
    if (e["home"].error()) continue;  // a redirect
    ++routed;
    bool home_routed = false;
    for (int64_t c : simdjson::dom::array(e["partitions"])) home_routed |= c == int64_t(e["home"]);
    EXPECT_TRUE(home_routed) << line;
  }
  EXPECT_GT(routed, 2000u);

  r = Neardup("rebalance --map " + Path("map.pb") + " --input " + Path("fresh.jsonl") + " --out " + Path("new.pb") +
              " --plan " + Path("plan.jsonl") + " --report " + Path("rebalance.json") + " --resident " + Path("crawl.jsonl"));
  ASSERT_EQ(r.code, 0) << r.err;
  simdjson::dom::element rb = parser.load(Path("rebalance.json"));
  EXPECT_EQ(int64_t(rb["generation"]), 2);
  EXPECT_LE(double(rb["imbalance_after"]), double(rb["imbalance_before"]) + 1e-9);

  // The flags' former names still work.
  r = Neardup("partition build --input " + Path("crawl.jsonl") + " --machines 4 --cells-per-machine 20 --out " +
              Path("old.pb") + " --report " + Path("old.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(int64_t(parser.load(Path("old.json"))["machines"]), 4);
}

// The figure computations run end to end and write one CSV row per configuration.
TEST_F(CliTest, PartitionExperimentsWriteTheirCsv) {
  ASSERT_EQ(Neardup("gen-crawl --pages 2000 --seed 3 --out " + Path("crawl.jsonl")).code, 0);
  auto rows = [&](const std::string& csv) {
    std::istringstream in(Read(Path(csv)));
    std::string line;
    size_t n = 0;
    while (std::getline(in, line)) ++n;
    return n - 1;  // header
  };
  Outcome r = Neardup("experiment imbalance --input " + Path("crawl.jsonl") + " --shards 2 8 --csv " + Path("f4.csv"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(rows("f4.csv"), 2u * 3u * 2u);  // shards x dims x {default, paper} fine-grain
  r = Neardup("experiment communication --input " + Path("crawl.jsonl") + " --shards 8 --thresholds 0.8 0.9 --csv " +
              Path("f5.csv"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(rows("f5.csv"), 2u * 2u);  // routing modes x thresholds
  r = Neardup("experiment stability --input " + Path("crawl.jsonl") + " --shards 4 --csv " + Path("st.csv"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(rows("st.csv"), 2u * 3u);  // {same, drifted} x dims
  // Epoch crawls, two assignments, one kind; the second run reads the vectors back from the cache
  // and writes the same rows.
  ASSERT_EQ(Neardup("gen-crawl --pages 1000 --seed 4 --epoch 1 --length-drift 0.1 --out " + Path("e1.jsonl")).code, 0);
  const std::string epochs = "experiment stability --input " + Path("crawl.jsonl") + " --epoch-inputs " +
                             Path("e1.jsonl") + " --kinds crawl_epochs --assignments largest-first spread " +
                             "--shards 2 4 --cache-dir " + Path("cache") + " --csv ";
  r = Neardup(epochs + Path("ep.csv"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(rows("ep.csv"), 3u * 2u * 2u);  // dims x assignments x shards
  EXPECT_THAT(Read(Path("ep.csv")), HasSubstr("crawl_epochs,4,3,"));
  r = Neardup(epochs + Path("ep2.csv"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err + r.out, HasSubstr("vectors from"));
  EXPECT_EQ(Read(Path("ep.csv")), Read(Path("ep2.csv")));
  EXPECT_NE(Neardup("experiment stability --input " + Path("crawl.jsonl") + " --assignments sideways --csv " +
                    Path("x.csv")).code, 0);
  EXPECT_NE(Neardup("experiment stability --input " + Path("crawl.jsonl") + " --kinds weekly --csv " + Path("x.csv"))
                .code, 0);
  r = Neardup("experiment recall --input " + Path("crawl.jsonl") + " --shards 8 --rhos 1.0 --csv " + Path("rc.csv"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(rows("rc.csv"), 2u);  // rho 1.0 and exact
  EXPECT_THAT(Read(Path("rc.csv")), HasSubstr("exact,1,8,0.9,"));
  EXPECT_EQ(Neardup("experiment imbalance --input " + Path("missing.jsonl") + " --csv " + Path("x.csv")).code, 1);
}

// The Tier 2 benchmark end to end on a small generated crawl: it loads a shard batch by batch,
// checks a sample against brute force (exit 1 on any mismatch), restarts the shard, and writes
// the growth rows.
TEST_F(CliTest, BenchTier2RunsAndAgreesWithBruteForce) {
  Outcome r = Neardup("bench tier2 --resident 3000 --batch 250 --batches 2 --brute-pages 40 --threshold 0.8 --growth "
                      "--workdir " + Path("work") + " --csv " + Path("growth.csv") + " --report " + Path("r.json"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("mismatches 0"));
  EXPECT_THAT(r.out, HasSubstr("restart (index rebuilt from the signature log)"));
  EXPECT_THAT(Read(Path("growth.csv")), HasSubstr("resident,next_pages,incremental_seconds"));
  EXPECT_THAT(Read(Path("r.json")), HasSubstr("\"brute_force_mismatches\":0"));
  EXPECT_EQ(Neardup("bench tier2 --resident 0").code, 2);
}

TEST_F(CliTest, BadPartitionMapsAreRefused) {
  Write("crawl.jsonl", "{\"url\":\"http://a.example/\",\"text\":\"some words here\"}\n");
  Write("garbage.pb", "this is not a partition map at all \xff\xfe");
  Outcome r = Neardup("partition route --map " + Path("garbage.pb") + " --input " + Path("crawl.jsonl"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("garbage.pb"));
  r = Neardup("rebalance --map " + Path("missing.pb") + " --input " + Path("crawl.jsonl") + " --out " + Path("o.pb") +
              " --plan " + Path("p.jsonl"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("missing.pb"));
  // A map of another format version.
  ASSERT_EQ(Neardup("partition build --input " + Path("crawl.jsonl") + " --shards 2 --out " + Path("m.pb") +
                    " --report " + Path("rep.json")).code, 0);
  std::string bytes = Read(Path("m.pb"));
  ASSERT_EQ(bytes[0], 0x08);  // field 1 (format_version), varint
  bytes[1] = 9;
  Write("v9.pb", bytes);
  r = Neardup("partition route --map " + Path("v9.pb") + " --input " + Path("crawl.jsonl"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("format_version 9"));
}

}  // namespace
}  // namespace neardup
