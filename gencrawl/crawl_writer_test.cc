// The crawl and truth records crawl_writer.cc writes: fields, order, the project reader, and the
// measured jaccard_to_source.
#include "gencrawl/crawl_generator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <string_view>

#include "common/rfc3339.h"
#include "document/crawl_reader.h"
#include "document/shingle.h"
#include "gencrawl/test_corpus.h"

namespace neardup::gencrawl {
namespace {

class CrawlWriterTest : public CorpusTest {};

TEST_F(CrawlWriterTest, EveryRecordHasTheRequiredFields) {
  static const std::map<std::string, std::string> kTld = {
      {"us", ".com"}, {"uk", ".co.uk"}, {"de", ".de"}, {"fr", ".fr"}};
  for (const Row& r : *rows_) {
    SCOPED_TRACE(r.line);
    EXPECT_TRUE(IsAbsoluteHttpUrl(r.url)) << r.url;
    EXPECT_EQ(static_cast<int>(r.is_html) + static_cast<int>(r.has_text) + static_cast<int>(r.has_redirect), 1);
    if (r.has_redirect) {
      EXPECT_TRUE(IsAbsoluteHttpUrl(r.redirect_to)) << r.redirect_to;
    }
    EXPECT_GE(r.popularity, 0.0);
    EXPECT_TRUE(ParseRfc3339(r.fetched_at).has_value()) << r.fetched_at;
    EXPECT_THAT(r.fetched_at, ::testing::MatchesRegex("2024-06-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]Z"));
    ASSERT_TRUE(kTld.count(r.market)) << r.market;
    const size_t scheme_end = r.url.find("://") + 3;
    const std::string host = r.url.substr(scheme_end, r.url.find('/', scheme_end) - scheme_end);
    EXPECT_TRUE(host.ends_with(kTld.at(r.market))) << host << " " << r.market;
  }
}

TEST_F(CrawlWriterTest, TheProjectReaderAcceptsEveryLine) {
  CrawlRecord rec;
  for (std::string_view line : Lines(out_->crawl)) {
    const Status st = ParseCrawlRecord(line, &rec);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
}

TEST_F(CrawlWriterTest, TruthMatchesTheCrawl) {
  static const std::set<std::string> kKinds = {
      "original", "unique", "exact_copy", "mirror", "boilerplate", "edit", "redirect", "redirect_chain",
      "redirect_cycle", "recrawl_unchanged", "recrawl_small_edit", "recrawl_rewrite", "recrawl_to_redirect"};
  std::map<std::string, int> count;
  for (size_t i = 0; i < rows_->size(); ++i) {
    const Row& r = (*rows_)[i];
    SCOPED_TRACE(r.line);
    EXPECT_EQ(r.line, static_cast<int64_t>(i + 1));
    ASSERT_TRUE(kKinds.count(r.kind)) << r.kind;
    ++count[r.kind];
    EXPECT_GE(r.family, -1);
    const bool redirect_kind = r.kind.find("redirect") != std::string::npos;
    EXPECT_EQ(r.has_redirect, redirect_kind);
    const bool expects_jaccard = !redirect_kind && r.kind != "original" && r.kind != "unique";
    EXPECT_EQ(r.has_jaccard, expects_jaccard);
    if (r.has_jaccard) {
      EXPECT_GE(r.jaccard, 0.0);
      EXPECT_LE(r.jaccard, 1.0);
    }
    if (r.kind == "unique" || r.kind == "redirect_cycle" || r.kind == "recrawl_rewrite") {
      EXPECT_EQ(r.family, -1);
    }
    if (r.kind == "original" || r.kind == "exact_copy" || r.kind == "mirror" || r.kind == "boilerplate" ||
        r.kind == "edit") {
      EXPECT_GE(r.family, 0);
    }
    if (r.kind == "exact_copy" || r.kind == "mirror" || r.kind == "recrawl_unchanged") {
      EXPECT_EQ(r.jaccard, 1.0);
    }
  }
  for (const std::string& k : kKinds) EXPECT_GT(count[k], 0) << k;
}

TEST_F(CrawlWriterTest, FetchedAtIsNonDecreasingOverTwoWeeks) {
  int64_t prev = 0;
  for (const Row& r : *rows_) {
    const int64_t t = *ParseRfc3339(r.fetched_at);
    EXPECT_GE(t, prev) << "line " << r.line;
    prev = t;
  }
  const int64_t first = *ParseRfc3339(rows_->front().fetched_at);
  const int64_t span_days = (prev - first) / 86400000;
  EXPECT_GE(span_days, 13);
  EXPECT_LE(span_days, 14);
}

// jaccard_to_source is what the real code measures between the record and its source (the
// family's original, which may be fetched before or after its copies; or, for a recrawl, the
// previous fetch of the URL).
TEST_F(CrawlWriterTest, JaccardToSourceIsTheMeasuredValue) {
  std::map<int64_t, const Row*> originals;
  for (const Row& r : *rows_) {
    if (r.kind == "original") originals[r.family] = &r;
  }
  std::map<std::string, const Row*> previous;  // previous content fetch of each URL
  int checked = 0;
  for (const Row& r : *rows_) {
    if (r.has_jaccard && r.kind != "exact_copy" && r.kind != "mirror" && r.kind != "recrawl_unchanged") {
      const Row* src = IsRecrawl(r) ? previous.at(r.url) : originals.at(r.family);
      const double j = Jaccard(ShingleSet(VisibleWords(r), 5), ShingleSet(VisibleWords(*src), 5));
      EXPECT_NEAR(j, r.jaccard, 1e-5) << "line " << r.line << " kind " << r.kind;
      ++checked;
    }
    if (IsContent(r) && !previous.count(r.url)) previous[r.url] = &r;
  }
  EXPECT_GE(checked, 200);
}

}  // namespace
}  // namespace neardup::gencrawl
