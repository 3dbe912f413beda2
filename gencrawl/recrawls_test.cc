// Recrawls (recrawls.cc): later fetches of earlier content URLs, and their share.
#include "gencrawl/crawl_generator.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/rfc3339.h"
#include "gencrawl/test_corpus.h"

namespace neardup::gencrawl {
namespace {

class RecrawlsTest : public CorpusTest {};

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

}  // namespace
}  // namespace neardup::gencrawl
