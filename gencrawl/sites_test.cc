// Sites and URLs (sites.cc): static and dynamic URLs, session parameters.
#include "gencrawl/crawl_generator.h"

#include <gtest/gtest.h>

#include <string>

#include "gencrawl/test_corpus.h"

namespace neardup::gencrawl {
namespace {

class SitesTest : public CorpusTest {};

TEST_F(SitesTest, UrlsMixStaticAndDynamic) {
  int dynamic = 0, session = 0;
  for (const Row& r : *rows_) {
    dynamic += r.url.find('?') != std::string::npos;
    session += r.url.find("sessionid=") != std::string::npos || r.url.find("sid=") != std::string::npos;
  }
  EXPECT_GT(dynamic, static_cast<int>(rows_->size()) / 5);
  EXPECT_LT(dynamic, static_cast<int>(rows_->size()) * 4 / 5);
  EXPECT_GT(session, 50);
}

}  // namespace
}  // namespace neardup::gencrawl
