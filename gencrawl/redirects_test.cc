// Redirect records (redirects.cc): chains end at content pages of the same family; cycles close.
#include "gencrawl/crawl_generator.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "gencrawl/test_corpus.h"

namespace neardup::gencrawl {
namespace {

class RedirectsTest : public CorpusTest {};

TEST_F(RedirectsTest, RedirectsChainsAndCycles) {
  std::map<std::string, const Row*> by_url;
  for (const Row& r : *rows_) {
    if (!IsRecrawl(r)) by_url[r.url] = &r;
  }
  int two_cycles = 0, three_cycles = 0, chains = 0;
  for (const Row& r : *rows_) {
    if (!r.has_redirect) continue;
    ASSERT_TRUE(by_url.count(r.redirect_to)) << "line " << r.line << " redirects to an unknown " << r.redirect_to;
    if (r.kind == "redirect") {
      EXPECT_TRUE(IsContent(*by_url.at(r.redirect_to))) << "line " << r.line;
    }
    if (r.kind == "redirect_cycle") {
      // Follow the cycle back to the start, as a reader must survive it.
      std::string u = r.redirect_to;
      int hops = 1;
      while (u != r.url && hops < 10) {
        const Row& next = *by_url.at(u);
        ASSERT_TRUE(next.has_redirect);
        EXPECT_EQ(next.kind, "redirect_cycle");
        u = next.redirect_to;
        ++hops;
      }
      EXPECT_EQ(u, r.url);
      two_cycles += hops == 2;
      three_cycles += hops == 3;
    }
    if (r.kind == "redirect_chain") {
      std::string u = r.redirect_to;
      int hops = 1;
      while (by_url.at(u)->has_redirect && hops < 10) {
        u = by_url.at(u)->redirect_to;
        ++hops;
      }
      EXPECT_LE(hops, 4);
      EXPECT_TRUE(IsContent(*by_url.at(u)));
      EXPECT_EQ(by_url.at(u)->family, r.family);
      ++chains;
    }
  }
  EXPECT_GT(two_cycles, 0);
  EXPECT_GT(three_cycles, 0);
  EXPECT_GT(chains, 10);
}

}  // namespace
}  // namespace neardup::gencrawl
