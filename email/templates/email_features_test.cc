#include "email/templates/email_features.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "document/shingle.h"

namespace neardup::email {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;

class FeaturesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto e = FeatureExtractor::Create(3);
    ASSERT_TRUE(e.ok());
    extractor_ = std::move(*e);
  }
  EmailFeatures Of(const std::string& html, const std::string& subject = "s", const std::string& sender = "a@x.example") {
    EmailRecord r;
    r.id = "1";
    r.sender = sender;
    r.recipient = "u@y.example";
    r.subject = subject;
    r.html = html;
    EmailFeatures f;
    EXPECT_TRUE(extractor_->Extract(r, &f).ok());
    return f;
  }
  std::unique_ptr<FeatureExtractor> extractor_;
};

TEST_F(FeaturesTest, XPathsIndexSiblingsOfTheSameTag) {
  EmailFeatures f = Of("<table><tr><td>a</td><td>b</td><td>c</td></tr><tr><td>d</td></tr></table><p>x</p><p>y</p>");
  EXPECT_THAT(f.xpaths, Contains("/html[0]/body[0]/table[0]/tbody[0]/tr[0]/td[2]"));
  EXPECT_THAT(f.xpaths, Contains("/html[0]/body[0]/table[0]/tbody[0]/tr[1]/td[0]"));
  EXPECT_THAT(f.xpaths, Contains("/html[0]/body[0]/p[1]"));
  EXPECT_THAT(f.xpaths, Contains("/html[0]/head[0]"));
  // Text blocks: one per element, with the element's XPath; head text is not visible.
  ASSERT_GE(f.blocks.size(), 6u);
  EXPECT_EQ(f.blocks[2].xpath, "/html[0]/body[0]/table[0]/tbody[0]/tr[0]/td[2]");
  EXPECT_EQ(f.blocks[2].text, "c");
  EXPECT_EQ(f.blocks.back().xpath, "/html[0]/body[0]/p[1]");
}

TEST_F(FeaturesTest, BlocksCollapseWhitespaceAndSplitAtChildren) {
  EmailFeatures f = Of("<html><head><title>T</title></head><body><div>  Hi\n  <b>Ann</b>,  thanks </div></body></html>");
  ASSERT_EQ(f.blocks.size(), 3u);
  EXPECT_EQ(f.blocks[0].text, "Hi");
  EXPECT_EQ(f.blocks[1].xpath, "/html[0]/body[0]/div[0]/b[0]");
  EXPECT_EQ(f.blocks[1].text, "Ann");
  EXPECT_EQ(f.blocks[2].text, ", thanks");
}

TEST_F(FeaturesTest, MinHashDependsOnStructureOnly) {
  EmailFeatures a = Of("<div><p>one text</p></div>", "subject a");
  EmailFeatures b = Of("<div><p>another entirely</p></div>", "subject b");
  EmailFeatures c = Of("<div><span>one text</span></div>", "subject a");
  EXPECT_EQ(a.minhash, b.minhash);
  EXPECT_NE(a.minhash, c.minhash);
  EXPECT_NE(a.minhash[0], a.minhash[1]);  // three different seeds
  EXPECT_EQ(a.minhash[0], XPathMinHash(a.xpaths, 0));
}

TEST_F(FeaturesTest, VerifiedKeysSeparateSendersPaperKeysDoNot) {
  EmailFeatures a = Of("<p>x</p>", "s", "Shop <NoReply+7@Shop.Example>");
  EmailFeatures b = Of("<p>x</p>", "s", "noreply@shop.example");
  EmailFeatures c = Of("<p>x</p>", "s", "other@shop.example");
  EXPECT_EQ(ClusterKeys(FingerprintMode::kVerified, a), ClusterKeys(FingerprintMode::kVerified, b));
  EXPECT_NE(ClusterKeys(FingerprintMode::kVerified, a), ClusterKeys(FingerprintMode::kVerified, c));
  EXPECT_EQ(ClusterKeys(FingerprintMode::kPaper, a), ClusterKeys(FingerprintMode::kPaper, c));
  EXPECT_EQ(CanonicalAddress(" Shop <NoReply+7@Shop.Example> "), "noreply@shop.example");
}

TEST_F(FeaturesTest, NumbersFoldToOneWordAndSubjectWordsAreTheirOwn) {
  EmailFeatures a = Of("<p>Your order 12345 total $ 10.50 ships today</p>", "Order 991");
  EmailFeatures b = Of("<p>Your order 99 total $ 7.25 ships today</p>", "Order 3");
  EXPECT_EQ(a.shingles, b.shingles);
  EmailFeatures c = Of("<p>order</p>", "x");
  EmailFeatures d = Of("<p>x</p>", "order");
  EXPECT_NE(c.shingles, d.shingles);
  EXPECT_TRUE(std::is_sorted(a.shingles.begin(), a.shingles.end()));
}

TEST(ParseFingerprintMode, NamesTheValue) {
  EXPECT_TRUE(ParseFingerprintMode("paper").ok());
  EXPECT_EQ(ParseFingerprintMode("x").status().message(),
            "unknown fingerprint mode \"x\" (expected \"verified\" or \"paper\")");
}

}  // namespace
}  // namespace neardup::email
