// The page model (page_model.cc): page lengths and their drift per epoch, popularity.
#include "gencrawl/crawl_generator.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <string_view>
#include <vector>

#include "document/tokenizer.h"
#include "gencrawl/test_corpus.h"

namespace neardup::gencrawl {
namespace {

// Word counts of the text records of a text-only crawl.
std::vector<size_t> TextLengths(const Output& out) {
  std::vector<size_t> lengths;
  simdjson::dom::parser parser;
  std::vector<uint64_t> words;
  for (std::string_view line : Lines(out.crawl)) {
    const simdjson::padded_string p(line);
    simdjson::dom::element e;
    std::string_view text;
    if (parser.parse(p).get(e) != simdjson::SUCCESS || e["text"].get(text) != simdjson::SUCCESS) continue;
    lengths.push_back(HashWords(text, &words));
  }
  return lengths;
}

TEST(PageModelTest, EpochZeroOrNoDriftIsTheUndriftedCrawl) {
  CrawlGenOptions o;
  o.pages = 1200;
  o.seed = 9;
  const Output base = Generate(o);
  CrawlGenOptions e0 = o;
  e0.length_drift = 0.05;  // epoch 0
  CrawlGenOptions d0 = o;
  d0.epoch = 7;  // no drift
  EXPECT_EQ(Generate(e0).crawl, base.crawl);
  EXPECT_EQ(Generate(d0).crawl, base.crawl);
  CrawlGenOptions drifted = o;
  drifted.epoch = 3;
  drifted.length_drift = 0.05;
  const Output a = Generate(drifted), b = Generate(drifted);
  EXPECT_EQ(a.crawl, b.crawl);  // still deterministic
  EXPECT_NE(a.crawl, base.crawl);
}

TEST(PageModelTest, LengthDriftMovesWeightBetweenSpikesAndStretchesTheBody) {
  CrawlGenOptions o;
  o.pages = 8000;
  o.seed = 5;
  o.html_share = 0;
  CrawlGenOptions later = o;
  later.epoch = 10;
  later.length_drift = 0.05;  // spikes x exp(+-0.5), body median x exp(0.25)
  const auto before = TextLengths(Generate(o)), after = TextLengths(Generate(later));
  ASSERT_GT(before.size(), 5000u);
  ASSERT_GT(after.size(), 5000u);
  // Share of pages near a spike (the generator's jitter, plus a few words of tokenizer slack).
  auto share = [](const std::vector<size_t>& v, size_t spike) {
    const size_t slack = spike / 80 + 3;
    return static_cast<double>(std::count_if(v.begin(), v.end(), [&](size_t n) {
             return n + slack >= spike && n <= spike + slack;
           })) / static_cast<double>(v.size());
  };
  EXPECT_GT(share(after, 237), 1.3 * share(before, 237));  // a growing spike
  EXPECT_LT(share(after, 142), 0.8 * share(before, 142));  // a shrinking one
  auto median = [](std::vector<size_t> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  EXPECT_NE(median(after), median(before));
}

class PageModelCorpusTest : public CorpusTest {};

TEST_F(PageModelCorpusTest, PageLengthsAreBoundedAndSpiky) {
  std::map<int, int> buckets;  // 10-word buckets
  int pages = 0;
  for (const Row& r : *rows_) {
    if (r.kind != "unique" && r.kind != "original") continue;
    const size_t n = VisibleWords(r).size();
    ASSERT_GE(n, 20u) << "line " << r.line;
    ASSERT_LE(n, 1700u) << "line " << r.line;
    ++buckets[static_cast<int>(n / 10)];
    ++pages;
  }
  std::vector<int> counts;
  int top_bucket = 0, top = 0;
  for (const auto& [b, c] : buckets) {
    counts.push_back(c);
    if (c > top) { top = c; top_bucket = b; }
  }
  std::sort(counts.begin(), counts.end());
  const int median = counts[counts.size() / 2];
  EXPECT_EQ(top_bucket, 23) << "the biggest spike is near 237 words";
  EXPECT_GE(top, 10 * median) << "top " << top << " median " << median;
  EXPECT_GT(static_cast<double>(top) / pages, 0.08);
  // A long right tail.
  int long_pages = 0;
  for (const auto& [b, c] : buckets) long_pages += b >= 100 ? c : 0;
  EXPECT_GT(long_pages, pages / 50);
}

TEST_F(PageModelCorpusTest, PopularityIsHeavyTailed) {
  std::vector<double> p;
  for (const Row& r : *rows_) p.push_back(r.popularity);
  std::sort(p.begin(), p.end());
  const double median = p[p.size() / 2], p999 = p[p.size() * 999 / 1000];
  EXPECT_GT(p999, 50 * median);
  EXPECT_EQ(p.front(), 0.0);
}

}  // namespace
}  // namespace neardup::gencrawl
