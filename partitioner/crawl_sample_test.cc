#include "partitioner/crawl_sample.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace neardup::partitioner {
namespace {

namespace fs = std::filesystem;

class CrawlSampleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::path(::testing::TempDir()) / ("crawl_sample_test_" + std::to_string(getpid()) + ".jsonl")).string();
    std::ofstream out(path_);
    for (int i = 0; i < kPages; ++i) {
      out << R"({"url":"http://s.example/p)" << i << R"(","text":"page )" << i << " of the sample test "
          << std::string(static_cast<size_t>(1 + i % 7), 'w') << " words here\"}\n";
    }
  }
  void TearDown() override { fs::remove(path_); }
  CrawlSample Sample(double rate, uint64_t max_pages, size_t round_records = 0, uint64_t keep_sets = 0) {
    CrawlSampleOptions o;
    o.sample_rate = rate;
    o.max_pages = max_pages;
    o.keep_sets = keep_sets;
    o.signer.threads = 2;
    o.signer.round_records = round_records;
    StatusOr<CrawlSample> s = SampleCrawl(path_, o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : CrawlSample();
  }

  static constexpr int kPages = 20000;
  std::string path_;
};

TEST_F(CrawlSampleTest, SamplesTheSameUrlsOverTheWholeInput) {
  const CrawlSample all = Sample(1.0, 0);
  EXPECT_TRUE(all.whole_input);
  EXPECT_EQ(all.sample.size(), static_cast<size_t>(kPages));
  EXPECT_EQ(all.reader.bytes, fs::file_size(path_));
  const CrawlSample tenth = Sample(0.1, 0);
  EXPECT_TRUE(tenth.whole_input);
  size_t in = 0;
  for (int i = 0; i < kPages; ++i) in += InSample("http://s.example/p" + std::to_string(i), 0.1);
  EXPECT_EQ(tenth.urls.size(), in);
  for (const std::string& url : tenth.urls) EXPECT_TRUE(InSample(url, 0.1)) << url;
  EXPECT_GT(in, static_cast<size_t>(kPages / 20));
  EXPECT_LT(in, static_cast<size_t>(kPages / 5));
}

// Signing rounds of any size (the sample's own small ones by default) give the same sample.
TEST_F(CrawlSampleTest, RoundsOfAnySizeGiveTheSameSample) {
  const CrawlSample whole = Sample(0.1, 0, 4096);
  for (size_t round : {size_t{0}, size_t{1}, size_t{7}}) {
    const CrawlSample s = Sample(0.1, 0, round);
    ASSERT_EQ(s.urls, whole.urls) << round;
    ASSERT_EQ(s.sample.size(), whole.sample.size()) << round;
    for (size_t i = 0; i < s.sample.size(); ++i) {
      EXPECT_EQ(s.sample.shingle_count(i), whole.sample.shingle_count(i)) << round << " " << i;
    }
    EXPECT_EQ(s.reader.bytes, whole.reader.bytes) << round;
  }
}

// max_pages: reading stops after the round of records that reached it, and the sample says how
// much of the input it read.
TEST_F(CrawlSampleTest, MaxPagesStopsReadingEarly) {
  const CrawlSample first = Sample(1.0, 5000);
  EXPECT_FALSE(first.whole_input);
  EXPECT_GE(first.sample.size(), 5000u);
  EXPECT_LT(first.sample.size(), static_cast<size_t>(kPages));
  EXPECT_LT(first.reader.bytes, fs::file_size(path_));
  // Its pages are the input's first ones.
  for (size_t i = 0; i < first.urls.size(); ++i) EXPECT_EQ(first.urls[i], "http://s.example/p" + std::to_string(i));
  // A cap the input never reaches reads it all.
  const CrawlSample all = Sample(1.0, kPages + 1);
  EXPECT_TRUE(all.whole_input);
  EXPECT_EQ(all.sample.size(), static_cast<size_t>(kPages));
}

// keep_sets keeps the shingle sets of the first sampled URLs, as the signer makes them; none by
// default.
TEST_F(CrawlSampleTest, KeepsTheShingleSetsOfTheFirstSampledPages) {
  EXPECT_TRUE(Sample(0.1, 0).sets.empty());
  const CrawlSample s = Sample(0.1, 0, 0, 50);
  ASSERT_EQ(s.sets.size(), 50u);
  const Signer signer{SignerOptions{}};
  for (size_t i = 0; i < s.sets.size(); ++i) {
    const std::string& url = s.urls[i];
    const int page = std::stoi(url.substr(url.find("/p") + 2));
    PageFeatures f;
    signer.Sign("page " + std::to_string(page) + " of the sample test " + std::string(static_cast<size_t>(1 + page % 7), 'w') +
                    " words here",
                &f);
    EXPECT_EQ(s.sets[i], f.shingles) << url;
  }
  EXPECT_EQ(Sample(0.1, 0, 0, kPages).sets.size(), s.urls.size());  // at most one a sampled URL
}

}  // namespace
}  // namespace neardup::partitioner
