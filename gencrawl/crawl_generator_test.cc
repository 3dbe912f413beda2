// GenerateCrawl's contract: determinism, option checks, stats, write errors, tiny corpora.
#include "gencrawl/crawl_generator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>

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
