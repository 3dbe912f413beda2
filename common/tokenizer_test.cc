#include "common/tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace neardup {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(Tokenizer, FoldsCaseAndSplitsOnPunctuation) {
  EXPECT_THAT(Tokenize("Hello, World! x2 -- 42"), ElementsAre("hello", "world", "x2", "42"));
}

TEST(Tokenizer, LatinLettersAreWordCharactersAndFold) {
  EXPECT_THAT(Tokenize("Ünïcödé CAFÉ naïve Łódź straße"), ElementsAre("ünïcödé", "café", "naïve", "łódź", "straße"));
}

TEST(Tokenizer, GreekAndCyrillicFold) {
  EXPECT_THAT(Tokenize("ΑΘΗΝΑ Москва"), ElementsAre("αθηνα", "москва"));
}

TEST(Tokenizer, ApostropheInsideAWordJoins) {
  EXPECT_THAT(Tokenize("don't it’s 'quoted' rock'"), ElementsAre("dont", "its", "quoted", "rock"));
}

TEST(Tokenizer, CjkCharactersAreOneWordEach) {
  EXPECT_THAT(Tokenize("abc東京def"), ElementsAre("abc", "東", "京", "def"));
}

TEST(Tokenizer, InvalidUtf8IsASeparatorNotACrash) {
  EXPECT_THAT(Tokenize(std::string("ab\xFF" "cd\xC3", 6)), ElementsAre("ab", "cd"));
  EXPECT_THAT(Tokenize(std::string("\xE2\x82", 2)), IsEmpty());                // truncated sequence
  EXPECT_THAT(Tokenize(std::string("x\xED\xA0\x80y", 5)), ElementsAre("x", "y"));  // surrogate
  EXPECT_THAT(Tokenize(std::string("a\xC0\xAFz", 4)), ElementsAre("a", "z"));      // overlong '/'
}

TEST(Tokenizer, EmptyAndSymbolOnlyTextHaveNoWords) {
  EXPECT_THAT(Tokenize(""), IsEmpty());
  EXPECT_THAT(Tokenize("  ... !!! ©® —  "), IsEmpty());
}

TEST(Tokenizer, HashWordsAgreesWithTokenizeAndWordHash) {
  const std::string text = "The quick brown Fox; the QUICK fox.";
  std::vector<uint64_t> h;
  EXPECT_EQ(HashWords(text, &h), 7u);
  const auto words = Tokenize(text);
  ASSERT_EQ(words.size(), h.size());
  for (size_t i = 0; i < h.size(); ++i) EXPECT_EQ(h[i], WordHash(words[i]));
  EXPECT_EQ(h[0], h[4]);  // "The" == "the"
  EXPECT_EQ(h[3], h[6]);  // "Fox" == "fox"
}

}  // namespace
}  // namespace neardup
