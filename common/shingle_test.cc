#include "common/shingle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "common/tokenizer.h"

namespace neardup {
namespace {

std::vector<uint64_t> Set(const std::string& text, int k = 5) {
  std::vector<uint64_t> w;
  HashWords(text, &w);
  return ShingleSet(w, k);
}

TEST(Shingle, OneShinglePerWordThanksToPadding) {
  EXPECT_EQ(Set("a b c d e f g h").size(), 8u);
  EXPECT_EQ(Set("one").size(), 1u);  // a one-word page still has a shingle
  EXPECT_TRUE(Set("").empty());
  EXPECT_TRUE(Set("!!!").empty());
}

TEST(Shingle, SetIsSortedAndUnique) {
  const auto s = Set("a b a b a b a b a b a b");
  EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
  EXPECT_EQ(std::adjacent_find(s.begin(), s.end()), s.end());
  // Windows: (a b a b a), (b a b a b) repeat; the last four are padded and distinct.
  EXPECT_EQ(s.size(), 2u + 4u);
}

TEST(Shingle, CaseAndPunctuationDoNotChangeTheSet) {
  EXPECT_EQ(Set("Hello, world! How are you today?"), Set("hello world how are you today"));
}

TEST(Shingle, KChangesTheSet) {
  EXPECT_NE(Set("a b c d e f", 3), Set("a b c d e f", 5));
  EXPECT_EQ(Set("a b c d e f", 1).size(), 6u);
}

TEST(Shingle, JaccardOfKnownSets) {
  const std::vector<uint64_t> a{1, 2, 3, 4}, b{3, 4, 5, 6}, empty;
  EXPECT_EQ(Overlap(a, b), 2u);
  EXPECT_DOUBLE_EQ(Jaccard(a, b), 2.0 / 6.0);
  EXPECT_DOUBLE_EQ(Jaccard(a, a), 1.0);
  EXPECT_DOUBLE_EQ(Jaccard(a, empty), 0.0);
  EXPECT_DOUBLE_EQ(Jaccard(empty, empty), 0.0);
}

TEST(Shingle, OneEditChangesAtMostKShinglesPerSide) {
  std::string base, edited;
  for (int i = 0; i < 100; ++i) {
    const std::string word = std::string("w").append(std::to_string(i));
    base.append(word).append(" ");
    edited.append(i == 50 ? std::string("changed") : word).append(" ");
  }
  const auto a = Set(base), b = Set(edited);
  EXPECT_EQ(a.size() - Overlap(a, b), 5u);
  EXPECT_DOUBLE_EQ(Jaccard(a, b), 95.0 / 105.0);
}

TEST(Shingle, JaccardAtLeastIsExactAtTheBoundary) {
  EXPECT_TRUE(JaccardAtLeast(9, 10, 9, 0.9));    // 9/10 == 0.9
  EXPECT_FALSE(JaccardAtLeast(8, 9, 9, 0.9));    // 8/10
  EXPECT_TRUE(JaccardAtLeast(7, 7, 7, 1.0));
  EXPECT_FALSE(JaccardAtLeast(6, 7, 7, 1.0));
  EXPECT_FALSE(JaccardAtLeast(0, 0, 0, 0.5));    // empty sets never match
  EXPECT_TRUE(JaccardAtLeast(1, 2, 1, 0.5));
}

TEST(Shingle, LengthVectorCountsEveryOccurrence) {
  std::vector<uint64_t> w;
  HashWords("a b c a b c a a a the the of", &w);
  const auto v = LengthVector(w, 3);
  ASSERT_EQ(v.size(), 3u);
  std::vector<uint32_t> expected(3, 0);
  const std::pair<const char*, uint32_t> counts[] = {{"a", 5}, {"b", 2}, {"c", 2}, {"the", 2}, {"of", 1}};
  for (const auto& [word, n] : counts) expected[SubDictionary(WordHash(word), 3)] += n;
  EXPECT_EQ(v, expected);
}

TEST(Shingle, SubDictionariesAreRoughlyBalancedOverAVocabulary) {
  std::vector<int> count(3, 0);
  for (int i = 0; i < 30000; ++i) ++count[SubDictionary(WordHash("word" + std::to_string(i)), 3)];
  for (int c : count) EXPECT_NEAR(c, 10000, 500);
}

TEST(Shingle, ShingleVectorSumsToSetSize) {
  std::vector<uint64_t> w;
  HashWords("lorem ipsum dolor sit amet consectetur adipiscing elit lorem ipsum dolor sit amet", &w);
  std::vector<uint32_t> per_dim;
  const auto s = ShingleSetWithDims(w, 5, 4, &per_dim);
  EXPECT_EQ(s, ShingleSet(w, 5));
  ASSERT_EQ(per_dim.size(), 4u);
  EXPECT_EQ(per_dim[0] + per_dim[1] + per_dim[2] + per_dim[3], s.size());
}

}  // namespace
}  // namespace neardup
