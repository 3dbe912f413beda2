// Recrawls (recrawls.cc): later fetches of earlier content URLs, and their share.
#include "gencrawl/crawl_generator.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <string_view>

#include "common/rfc3339.h"
#include "gencrawl/test_corpus.h"

namespace neardup::gencrawl {
namespace {

class RecrawlsTest : public CorpusTest {};

bool IsRecrawlKind(std::string_view kind) { return kind.rfind("recrawl_", 0) == 0; }

TEST_F(RecrawlsTest, UrlsAreUniqueExceptRecrawls) {
  std::map<std::string, const Row*> first_fetch;
  for (const Row& r : *rows_) {
    if (IsRecrawl(r)) continue;
    EXPECT_TRUE(first_fetch.emplace(r.url, &r).second) << "duplicate URL " << r.url;
  }
  int recrawls = 0;
  for (const Row& r : *rows_) {
    if (!IsRecrawl(r)) continue;
    ++recrawls;
    auto it = first_fetch.find(r.url);
    ASSERT_NE(it, first_fetch.end()) << r.url;
    const Row& orig = *it->second;
    EXPECT_LT(orig.line, r.line);
    EXPECT_TRUE(IsContent(orig)) << "line " << orig.line;
    EXPECT_GT(*ParseRfc3339(r.fetched_at), *ParseRfc3339(orig.fetched_at));
    if (r.kind == "recrawl_to_redirect") {
      EXPECT_TRUE(r.has_redirect);
    } else {
      EXPECT_TRUE(IsContent(r));
    }
  }
  const double share = static_cast<double>(recrawls) / static_cast<double>(rows_->size());
  EXPECT_GE(share, 0.10);
  EXPECT_LE(share, 0.15);
}


// Fields of a crawl line and its truth line that the second crawl's tests need.
struct Fetch {
  std::string url, fetched_at, kind;
  bool content = false;
};

std::vector<Fetch> ParseFetches(const Output& out) {
  std::vector<Fetch> fetches;
  simdjson::dom::parser parser;
  const auto crawl = Lines(out.crawl);
  const auto truth = Lines(out.truth);
  EXPECT_EQ(crawl.size(), truth.size());
  for (size_t i = 0; i < crawl.size() && i < truth.size(); ++i) {
    Fetch f;
    simdjson::dom::object obj;
    const simdjson::padded_string pc(crawl[i]);
    EXPECT_EQ(parser.parse(pc).get(obj), simdjson::SUCCESS) << "crawl line " << i + 1;
    std::string_view sv;
    EXPECT_EQ(obj["url"].get(sv), simdjson::SUCCESS);
    f.url = sv;
    EXPECT_EQ(obj["fetched_at"].get(sv), simdjson::SUCCESS);
    f.fetched_at = sv;
    f.content = obj["text"].error() == simdjson::SUCCESS || obj["html"].error() == simdjson::SUCCESS;
    simdjson::dom::object tobj;
    const simdjson::padded_string pt(truth[i]);
    EXPECT_EQ(parser.parse(pt).get(tobj), simdjson::SUCCESS) << "truth line " << i + 1;
    EXPECT_EQ(tobj["kind"].get(sv), simdjson::SUCCESS);
    f.kind = sv;
    fetches.push_back(std::move(f));
  }
  return fetches;
}

TEST(SecondCrawlTest, HalfTheSecondCrawlRefetchesTheFirstsUrls) {
  CrawlGenOptions o;
  o.pages = 8000;
  o.seed = 11;
  o.second_crawl_overlap = 0.5;
  const Output two = Generate(o);
  ASSERT_TRUE(two.status.ok()) << two.status.ToString();
  EXPECT_EQ(two.stats.second_crawl_first_line, 4001u);
  EXPECT_EQ(two.stats.second_crawl_refetches, 2000u);
  const std::vector<Fetch> f = ParseFetches(two);
  ASSERT_EQ(f.size(), 8000u);

  // The first crawl is, byte for byte, the crawl of half the pages.
  CrawlGenOptions half = o;
  half.pages = 4000;
  half.second_crawl_overlap = 0;
  const Output first = Generate(half);
  ASSERT_TRUE(first.status.ok());
  ASSERT_LE(first.crawl.size(), two.crawl.size());
  EXPECT_TRUE(std::string_view(two.crawl).substr(0, first.crawl.size()) == first.crawl);

  std::map<std::string, int> first_fetches;  // URL -> fetches in the first crawl
  std::string last_first_time;
  for (size_t i = 0; i < 4000; ++i) {
    ++first_fetches[f[i].url];
    last_first_time = std::max(last_first_time, f[i].fetched_at);
  }
  uint64_t refetches = 0, kinds[4] = {0, 0, 0, 0};
  std::set<std::string> second_urls;
  for (size_t i = 4000; i < f.size(); ++i) {
    EXPECT_GT(f[i].fetched_at, last_first_time) << "line " << i + 1;
    EXPECT_TRUE(second_urls.insert(f[i].url).second) << "URL fetched twice in the second crawl: " << f[i].url;
    auto it = first_fetches.find(f[i].url);
    if (it == first_fetches.end()) {
      EXPECT_FALSE(IsRecrawlKind(f[i].kind)) << "line " << i + 1 << ": " << f[i].kind;
      EXPECT_TRUE(f[i].content) << "line " << i + 1;
      continue;
    }
    ++refetches;
    EXPECT_EQ(it->second, 1) << f[i].url << " was fetched again within the first crawl";
    if (f[i].kind == "recrawl_unchanged") ++kinds[0];
    else if (f[i].kind == "recrawl_small_edit") ++kinds[1];
    else if (f[i].kind == "recrawl_rewrite") ++kinds[2];
    else if (f[i].kind == "recrawl_to_redirect") ++kinds[3];
    else ADD_FAILURE() << "line " << i + 1 << ": refetch of kind " << f[i].kind;
  }
  EXPECT_EQ(refetches, 2000u);
  // 45/28/15/12% with binomial noise (sd ~1.1% on 2000 draws).
  EXPECT_NEAR(kinds[0] / 2000.0, 0.45, 0.04);
  EXPECT_NEAR(kinds[1] / 2000.0, 0.28, 0.04);
  EXPECT_NEAR(kinds[2] / 2000.0, 0.15, 0.03);
  EXPECT_NEAR(kinds[3] / 2000.0, 0.12, 0.03);
}

TEST(SecondCrawlTest, RejectsAShareOutsideZeroToOne) {
  CrawlGenOptions o;
  o.pages = 100;
  o.second_crawl_overlap = 1.5;
  const Output out = Generate(o);
  EXPECT_EQ(out.status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(out.status.message().find("second_crawl_overlap"), std::string::npos) << out.status.message();
  o.second_crawl_overlap = 0.5;
  o.pages = 1;
  EXPECT_EQ(Generate(o).status.code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace neardup::gencrawl
