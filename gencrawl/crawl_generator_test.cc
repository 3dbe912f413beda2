// GenerateCrawl's contract: determinism, option checks, stats, write errors, tiny corpora.
#include "gencrawl/crawl_generator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>

#include "gencrawl/test_corpus.h"

namespace neardup::gencrawl {
namespace {

TEST(CrawlGeneratorTest, SameSeedSameBytesOtherSeedOtherBytes) {
  CrawlGenOptions o;
  o.pages = 1500;
  o.seed = 42;
  const Output a = Generate(o), b = Generate(o);
  ASSERT_TRUE(a.status.ok());
  EXPECT_EQ(a.crawl, b.crawl);
  EXPECT_EQ(a.truth, b.truth);
  o.seed = 43;
  const Output c = Generate(o);
  ASSERT_TRUE(c.status.ok());
  EXPECT_NE(a.crawl, c.crawl);
  EXPECT_NE(a.truth, c.truth);
}

TEST(CrawlGeneratorTest, TruthFileDoesNotChangeTheCrawl) {
  CrawlGenOptions o;
  o.pages = 800;
  const Output with = Generate(o, true), without = Generate(o, false);
  ASSERT_TRUE(without.status.ok());
  EXPECT_EQ(with.crawl, without.crawl);
}

TEST(CrawlGeneratorTest, StatsMatchTheOutput) {
  CrawlGenOptions o;
  o.pages = 1200;
  const Output out = Generate(o);
  ASSERT_TRUE(out.status.ok());
  EXPECT_EQ(out.stats.records, 1200u);
  EXPECT_EQ(out.stats.content_records + out.stats.redirect_records, out.stats.records);
  EXPECT_EQ(out.stats.bytes, out.crawl.size());
  EXPECT_GT(out.stats.families, 0u);
  EXPECT_GT(out.stats.recrawl_records, 0u);
}

// gone_share turns some recrawls into gone records and changes nothing else: every other line is
// the line of the crawl without gone records; each gone record is a later fetch of a URL fetched
// with content before. 0 is the generator without the option.
TEST(CrawlGeneratorTest, GoneShareTurnsRecrawlsIntoGoneRecordsAndChangesNothingElse) {
  CrawlGenOptions o;
  o.pages = 3000;
  o.seed = 9;
  const Output plain = Generate(o);
  o.gone_share = 0;
  EXPECT_EQ(Generate(o).crawl, plain.crawl);
  o.gone_share = 0.5;
  const Output gone = Generate(o);
  ASSERT_TRUE(gone.status.ok());
  EXPECT_EQ(gone.stats.records, 3000u);
  EXPECT_EQ(gone.stats.content_records + gone.stats.redirect_records + gone.stats.gone_records, gone.stats.records);
  EXPECT_EQ(gone.stats.recrawl_records, plain.stats.recrawl_records);
  // About half of the ~12% recrawls.
  EXPECT_GT(gone.stats.gone_records, 120u);
  EXPECT_LT(gone.stats.gone_records, 240u);
  const auto a = Lines(plain.crawl), b = Lines(gone.crawl);
  const auto ta = Lines(plain.truth), tb = Lines(gone.truth);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(tb.size(), b.size());
  simdjson::dom::parser parser;
  std::set<std::string> fetched;  // URLs fetched with content so far
  uint64_t gone_lines = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    simdjson::dom::element e;
    ASSERT_EQ(parser.parse(std::string(b[i])).get(e), simdjson::SUCCESS);
    const std::string url{std::string_view(e["url"])};
    bool is_gone = false;
    if (e["gone"].get_bool().get(is_gone) != simdjson::SUCCESS || !is_gone) {
      EXPECT_EQ(a[i], b[i]) << "line " << i + 1;
      EXPECT_EQ(ta[i], tb[i]) << "line " << i + 1;
      if (e["redirect_to"].error() != simdjson::SUCCESS) fetched.insert(url);
      continue;
    }
    ++gone_lines;
    EXPECT_EQ(e["text"].error(), simdjson::NO_SUCH_FIELD);
    EXPECT_EQ(e["html"].error(), simdjson::NO_SUCH_FIELD);
    EXPECT_EQ(e["redirect_to"].error(), simdjson::NO_SUCH_FIELD);
    EXPECT_EQ(fetched.count(url), 1u) << url << " is gone before it was fetched";
    EXPECT_NE(tb[i].find("\"kind\":\"recrawl_gone\""), std::string_view::npos) << tb[i];
    EXPECT_EQ(tb[i].find("jaccard_to_source"), std::string_view::npos) << tb[i];
    simdjson::dom::element before;
    ASSERT_EQ(parser.parse(std::string(ta[i])).get(before), simdjson::SUCCESS);
    EXPECT_EQ(std::string_view(before["url"]), url) << "the recrawl it replaces has its URL";
  }
  EXPECT_EQ(gone_lines, gone.stats.gone_records);
  o.gone_share = 1.01;
  EXPECT_EQ(Generate(o).status.code(), StatusCode::kInvalidArgument);
}

// drift moves the length distribution of later pages: the second half's lines are longer than the
// first half's, which they are not without it; 0 writes the bytes of the generator without it.
TEST(CrawlGeneratorTest, DriftMakesLaterPagesLonger) {
  CrawlGenOptions o;
  o.pages = 4000;
  o.seed = 5;
  const Output plain = Generate(o);
  o.drift = 0;
  EXPECT_EQ(Generate(o).crawl, plain.crawl);
  auto later_over_earlier = [](const std::string& crawl) {
    std::vector<size_t> lengths;
    for (size_t at = 0; at < crawl.size();) {
      const size_t end = crawl.find('\n', at);
      lengths.push_back(end - at);
      at = end + 1;
    }
    double first = 0, second = 0;
    for (size_t i = 0; i < lengths.size(); ++i) (i < lengths.size() / 2 ? first : second) += static_cast<double>(lengths[i]);
    return second / first;
  };
  o.drift = 1;
  const Output drifted = Generate(o);
  ASSERT_TRUE(drifted.status.ok());
  EXPECT_EQ(drifted.stats.records, plain.stats.records);
  EXPECT_LT(std::abs(later_over_earlier(plain.crawl) - 1), 0.1);
  EXPECT_GT(later_over_earlier(drifted.crawl), 1.15);
}

TEST(CrawlGeneratorTest, TinyCorporaHaveExactlyThePagesAsked) {
  for (uint64_t pages : {1, 2, 5, 19, 20, 37}) {
    CrawlGenOptions o;
    o.pages = pages;
    const Output out = Generate(o);
    ASSERT_TRUE(out.status.ok()) << pages;
    EXPECT_EQ(Lines(out.crawl).size(), pages);
    EXPECT_EQ(Lines(out.truth).size(), pages);
    EXPECT_EQ(out.stats.records, pages);
  }
}

TEST(CrawlGeneratorTest, BadOptionsAreRefused) {
  std::FILE* f = std::tmpfile();
  auto code = [&](CrawlGenOptions o, std::FILE* crawl) { return GenerateCrawl(o, crawl, nullptr, nullptr).code(); };
  CrawlGenOptions ok;
  ok.pages = 5;
  EXPECT_EQ(code(ok, f), StatusCode::kOk);
  EXPECT_EQ(code(ok, nullptr), StatusCode::kInvalidArgument);
  CrawlGenOptions o = ok;
  o.pages = 0;
  EXPECT_EQ(code(o, f), StatusCode::kInvalidArgument);
  o = ok;
  o.pages = 200000000;
  EXPECT_EQ(code(o, f), StatusCode::kInvalidArgument);
  for (double share : {-0.01, 1.01, std::nan("")}) {
    o = ok;
    o.html_share = share;
    EXPECT_EQ(code(o, f), StatusCode::kInvalidArgument) << share;
  }
  for (int k : {0, -1, 17}) {
    o = ok;
    o.shingle_k = k;
    EXPECT_EQ(code(o, f), StatusCode::kInvalidArgument) << k;
  }
  for (int k : {1, 16}) {
    o = ok;
    o.shingle_k = k;
    EXPECT_EQ(code(o, f), StatusCode::kOk) << k;
  }
  for (double drift : {-0.01, 0.3, std::nan("")}) {
    o = ok;
    o.length_drift = drift;
    EXPECT_EQ(code(o, f), StatusCode::kInvalidArgument) << drift;
  }
  for (double drift : {-0.01, 1.01, std::nan("")}) {
    o = ok;
    o.drift = drift;
    EXPECT_EQ(code(o, f), StatusCode::kInvalidArgument) << drift;
  }
  o = ok;
  o.epoch = 101;
  EXPECT_EQ(code(o, f), StatusCode::kInvalidArgument);
  std::fclose(f);
}

TEST(CrawlGeneratorTest, WriteFailureIsIoError) {
  std::FILE* full = std::fopen("/dev/full", "w");
  if (full == nullptr) GTEST_SKIP() << "no /dev/full";
  CrawlGenOptions o;
  o.pages = 50;
  EXPECT_EQ(GenerateCrawl(o, full, nullptr, nullptr).code(), StatusCode::kIoError);
  std::fclose(full);
  std::FILE* crawl = std::tmpfile();
  full = std::fopen("/dev/full", "w");
  EXPECT_EQ(GenerateCrawl(o, crawl, full, nullptr).code(), StatusCode::kIoError);
  std::fclose(full);
  std::fclose(crawl);
}

// Run by hand: ./crawl_generator_test --gtest_also_run_disabled_tests --gtest_filter='*Million*'
TEST(CrawlGeneratorTest, DISABLED_MillionPages) {
  CrawlGenOptions o;
  o.pages = 1000000;
  std::FILE* crawl = std::tmpfile();
  std::FILE* truth = std::tmpfile();
  CrawlGenStats s;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(GenerateCrawl(o, crawl, truth, &s).ok());
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("1M pages: %.1f s, %llu bytes, %llu content, %llu redirect, %llu recrawl, %llu families\n", sec,
              static_cast<unsigned long long>(s.bytes), static_cast<unsigned long long>(s.content_records),
              static_cast<unsigned long long>(s.redirect_records), static_cast<unsigned long long>(s.recrawl_records),
              static_cast<unsigned long long>(s.families));
  std::fclose(crawl);
  std::fclose(truth);
}

}  // namespace
}  // namespace neardup::gencrawl
