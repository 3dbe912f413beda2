#include "document/tokenizer.h"

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

// Lower-case ASCII runs are emitted in place; whatever can extend one must still join it.
TEST(Tokenizer, LowerCaseRunsJoinWhatFollowsThem) {
  EXPECT_THAT(Tokenize("abcDEF ghi"), ElementsAre("abcdef", "ghi"));
  EXPECT_THAT(Tokenize("abc'def abc' def 'abc"), ElementsAre("abcdef", "abc", "def", "abc"));
  EXPECT_THAT(Tokenize("caf\xC3\xA9 abc\xE2\x80\x99s x\xC3\x97y"), ElementsAre("café", "abcs", "x", "y"));
  EXPECT_THAT(Tokenize("abc\xE6\x9D\xB1 9lives 2B end"), ElementsAre("abc", "東", "9lives", "2b", "end"));
  EXPECT_THAT(Tokenize("a.b,c\td\ne"), ElementsAre("a", "b", "c", "d", "e"));
  EXPECT_THAT(Tokenize("x'"), ElementsAre("x"));
  EXPECT_THAT(Tokenize("ab\xFF"), ElementsAre("ab"));
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

// The 64-byte block scan and the 16-byte scan of ASCII runs (with its fast paths for whole words
// and the separators after them) against the byte-at-a-time scan, on random mixes of the cases
// that matter: runs shorter and longer than 16 and 64 bytes, capitals, apostrophes, non-ASCII
// letters and separators, invalid bytes, and runs ending at the text's end or a block's.
TEST(Tokenizer, SixteenByteScanAgreesWithBytewiseScan) {
  const std::vector<std::string> pieces = {
      "a", "z", "Q", "9", "abc", "Hello", "WORLD", "xYz", "0123456789", "abcdefghijklmnopqrstuvwxyz",
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef", std::string(70, 'K'), std::string(63, 'm') + "N",
      " ", "  ", ", ", ".", "-", "\n", "'", "\xE2\x80\x99", "\xC3\xA9", "\xC3\x89", "\xE6\x9D\xB1", "\xFF", "@[`{",
      "\xC3\x97", "\xCE\x91"};
  uint64_t state = 42;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<size_t>(state >> 33);
  };
  std::vector<uint64_t> hashes;
  for (int round = 0; round < 20000; ++round) {
    std::string text;
    const size_t parts = 1 + next() % (round % 2 == 0 ? 40 : 160);  // 64-byte blocks, several a text
    for (size_t k = 0; k < parts; ++k) text += pieces[next() % pieces.size()];
    const auto want = internal::TokenizeBytewise(text);
    ASSERT_EQ(Tokenize(text), want) << "text: " << text;
    hashes.clear();
    ASSERT_EQ(HashWords(text, &hashes), want.size());
    for (size_t k = 0; k < want.size(); ++k) ASSERT_EQ(hashes[k], WordHash(want[k])) << "text: " << text;
  }
}

}  // namespace
}  // namespace neardup
