// The renderer (renderer.cc): html and text records of the same content have the same visible
// words; what html adds is not visible.
#include "gencrawl/crawl_generator.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "document/tokenizer.h"
#include "gencrawl/test_corpus.h"

namespace neardup::gencrawl {
namespace {

TEST(RendererTest, HtmlShareExtremes) {
  CrawlGenOptions o;
  o.pages = 300;
  o.html_share = 0.0;
  Output out = Generate(o);
  ASSERT_TRUE(out.status.ok());
  EXPECT_EQ(out.crawl.find("\"html\":"), std::string::npos);
  o.html_share = 1.0;
  out = Generate(o);
  ASSERT_TRUE(out.status.ok());
  EXPECT_EQ(out.crawl.find("\"text\":"), std::string::npos);
}

class RendererCorpusTest : public CorpusTest {};

// The html of a page and the text of the same content give the same words once the project's
// extractor drops what is not visible.
TEST_F(RendererCorpusTest, HtmlAndTextOfTheSameContentHaveTheSameWords) {
  std::map<int64_t, const Row*> originals;
  for (const Row& r : *rows_) {
    if (r.kind == "original") originals[r.family] = &r;
  }
  int compared = 0;
  for (const Row& r : *rows_) {
    if (r.kind != "exact_copy" && r.kind != "mirror") continue;
    const Row& o = *originals.at(r.family);
    if (o.is_html == r.is_html) continue;
    EXPECT_EQ(VisibleWords(o), VisibleWords(r)) << "lines " << o.line << " and " << r.line;
    ++compared;
  }
  EXPECT_GE(compared, 20);
}

TEST_F(RendererCorpusTest, ScriptAndStyleWordsAreNotVisible) {
  int checked = 0;
  for (const Row& r : *rows_) {
    if (!r.is_html) continue;
    std::vector<uint64_t> naive;
    HashWords(r.body, &naive);  // every word in the markup, scripts included
    EXPECT_GT(naive.size(), VisibleWords(r).size() + 30);
    EXPECT_NE(r.body.find("<script"), std::string::npos);
    EXPECT_NE(r.body.find("<style>"), std::string::npos);
    if (++checked == 50) break;
  }
}

}  // namespace
}  // namespace neardup::gencrawl
