#include "document/html_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "document/tokenizer.h"

namespace neardup {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class HtmlToTextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto e = HtmlToText::Create();
    ASSERT_TRUE(e.ok());
    extractor_ = std::move(*e);
  }
  std::vector<std::string> Words(std::string_view html) {
    std::string text;
    EXPECT_TRUE(extractor_->Extract(html, &text).ok());
    return Tokenize(text);
  }
  std::unique_ptr<HtmlToText> extractor_;
};

TEST_F(HtmlToTextTest, DropsHeadScriptStyleNoscriptTemplateAndComments) {
  EXPECT_THAT(Words("<html><head><title>Title here</title><style>p { color: red }</style>"
                    "<script>var hidden = 'words';</script></head><body><p>Visible text</p>"
                    "<noscript>enable js</noscript><template><p>tmpl</p></template><!-- a comment -->"
                    "<div>more</div></body></html>"),
              ElementsAre("visible", "text", "more"));
}

TEST_F(HtmlToTextTest, DecodesEntities) {
  EXPECT_THAT(Words("<p>Fish &amp; Chips&nbsp;caf&eacute; don&#8217;t &#x41;BC</p>"),
              ElementsAre("fish", "chips", "café", "dont", "abc"));
}

TEST_F(HtmlToTextTest, ElementsNeverGlueWords) {
  EXPECT_THAT(Words("<div>one</div><div>two</div><td>three</td><li>four</li>"),
              ElementsAre("one", "two", "three", "four"));
}

TEST_F(HtmlToTextTest, MalformedMarkupSurvives) {
  EXPECT_THAT(Words("<p>unclosed <b>bold <i>italic</p> tail <div <<>> </span></table>end"),
              ::testing::Contains("tail"));
  EXPECT_THAT(Words("<<<<>>>><</"), ::testing::IsEmpty());
  std::string deep;
  for (int i = 0; i < 20000; ++i) deep += "<div>";
  deep += "bottom";
  EXPECT_THAT(Words(deep), ElementsAre("bottom"));
}

TEST_F(HtmlToTextTest, InvalidUtf8Survives) {
  EXPECT_THAT(Words(std::string("<p>ok\xFF\xFE bytes \xC3</p>")), ElementsAre("ok", "bytes"));
}

TEST_F(HtmlToTextTest, EmptyAndScriptOnlyPagesHaveNoText) {
  EXPECT_THAT(Words(""), IsEmpty());
  EXPECT_THAT(Words("<script>document.write('only script')</script>"), IsEmpty());
  EXPECT_THAT(Words("<html><body><script>a b c</script><style>d e</style></body></html>"), IsEmpty());
}

TEST_F(HtmlToTextTest, ReusableAcrossDocuments) {
  EXPECT_THAT(Words("<p>first</p>"), ElementsAre("first"));
  EXPECT_THAT(Words("<p>second</p>"), ElementsAre("second"));
}

// Records the walk as a string: "<tag" for Enter, ">" for Leave, "'text'" (or "~'text'" when
// not visible) for Text.
struct WalkLog : HtmlVisitor {
  std::string log;
  void Enter(std::string_view tag) override {
    log += '<';
    log.append(tag);
  }
  void Leave() override { log += ">"; }
  void Text(std::string_view text, bool visible) override {
    if (!visible) log += '~';
    log += '\'';
    log.append(text);
    log += '\'';
  }
};

TEST_F(HtmlToTextTest, WalkReportsElementsAndTextInDocumentOrder) {
  WalkLog w;
  ASSERT_TRUE(extractor_->Walk("<!DOCTYPE html><title>T</title><table><tr><td>a &amp; b</td><td>c</td></tr></table>"
                               "<!-- gone --><script>x</script>", &w).ok());
  EXPECT_EQ(w.log, "<html<head<title~'T'>><body<table<tbody<tr<td'a & b'><td'c'>>>><script~'x'>>>");
}

TEST_F(HtmlToTextTest, WalkSurvivesDeepNestingAndInvalidUtf8) {
  std::string html;
  for (int i = 0; i < 20000; ++i) html += "<div>";
  html += "deep\xff";
  WalkLog w;
  ASSERT_TRUE(extractor_->Walk(html, &w).ok());
  EXPECT_NE(w.log.find("'deep\xEF\xBF\xBD'"), std::string::npos);
  EXPECT_EQ(std::count(w.log.begin(), w.log.end(), '<'), std::count(w.log.begin(), w.log.end(), '>'));
}

}  // namespace
}  // namespace neardup
