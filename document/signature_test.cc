#include "document/signature.h"

#include <gtest/gtest.h>

#include <numeric>

#include "document/shingle.h"

namespace neardup {
namespace {

TEST(Signer, FeaturesAreConsistent) {
  Signer signer({.k = 5, .dims = 3});
  PageFeatures f;
  signer.Sign("The quick brown fox jumps over the lazy dog. The quick brown fox!", &f);
  EXPECT_EQ(f.word_count, 13u);
  EXPECT_EQ(std::accumulate(f.length_vector.begin(), f.length_vector.end(), 0u), 13u);
  EXPECT_EQ(std::accumulate(f.shingle_vector.begin(), f.shingle_vector.end(), 0u), f.shingles.size());
  EXPECT_TRUE(std::is_sorted(f.shingles.begin(), f.shingles.end()));
  EXPECT_TRUE(ValidateSignature(ToProto("http://x.example/", f, signer.options())).ok());
}

TEST(Signer, DigestIgnoresCaseAndPunctuationButNotWords) {
  Signer signer({});
  PageFeatures a, b, c;
  signer.Sign("Hello, World", &a);
  signer.Sign("hello world!!", &b);
  signer.Sign("hello there world", &c);
  EXPECT_EQ(a.digest, b.digest);
  EXPECT_NE(a.digest, c.digest);
}

TEST(Signer, EmptyTextGivesEmptySignature) {
  Signer signer({});
  PageFeatures f;
  signer.Sign("", &f);
  EXPECT_TRUE(f.shingles.empty());
  EXPECT_EQ(f.word_count, 0u);
  EXPECT_EQ(f.length_vector, std::vector<uint32_t>(3, 0));
}

TEST(Signer, OptionsAreValidated) {
  EXPECT_FALSE(ValidateSignerOptions({.k = 0, .dims = 3}).ok());
  EXPECT_FALSE(ValidateSignerOptions({.k = 17, .dims = 3}).ok());
  EXPECT_FALSE(ValidateSignerOptions({.k = 5, .dims = 0}).ok());
  EXPECT_TRUE(ValidateSignerOptions({.k = 16, .dims = 16}).ok());
}

TEST(Signature, UnsortedOrInconsistentSignaturesAreRefused) {
  pb::PageSignature s;
  s.set_url("http://x.example/");
  s.add_shingles(5);
  s.add_shingles(3);
  Status st = ValidateSignature(s);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("not sorted"), std::string::npos);
  s.clear_shingles();
  s.add_shingles(3);
  s.add_shingles(3);
  EXPECT_FALSE(ValidateSignature(s).ok());  // duplicate
  s.clear_shingles();
  s.add_shingles(1);
  s.add_length_vector(1);
  s.add_shingle_vector(2);
  EXPECT_FALSE(ValidateSignature(s).ok());  // vector sum mismatch
  s.clear_shingle_vector();
  EXPECT_FALSE(ValidateSignature(s).ok());  // dimension mismatch
}

TEST(Signature, AFaultAnywhereInALongSetIsFoundAtItsIndex) {
  // The check runs in blocks of 64 hashes: faults at each end of a block, and across two.
  for (int n : {2, 63, 64, 65, 129, 300}) {
    pb::PageSignature s;
    s.set_url("http://x.example/");
    for (int i = 0; i < n; ++i) s.add_shingles(static_cast<uint64_t>(10 * i + 10));
    s.add_length_vector(static_cast<uint32_t>(n));
    s.add_shingle_vector(static_cast<uint32_t>(n));
    ASSERT_TRUE(ValidateSignature(s).ok()) << n;
    for (int at = 1; at < n; ++at) {
      for (uint64_t value : {s.shingles(at - 1), s.shingles(at - 1) - 1}) {  // a repeat, a step down
        pb::PageSignature bad = s;
        bad.set_shingles(at, value);
        if (at + 1 < n) bad.set_shingles(at + 1, s.shingles(at + 1));
        const Status st = ValidateSignature(bad);
        ASSERT_FALSE(st.ok()) << n << " " << at;
        EXPECT_NE(st.message().find("at index " + std::to_string(at)), std::string::npos) << st.message();
      }
    }
  }
}

TEST(Signature, ProtoRoundTrip) {
  Signer signer({});
  PageFeatures f;
  signer.Sign("a b c d e f g", &f);
  pb::PageSignature s = ToProto("http://x.example/", f, signer.options());
  pb::PageSignature back;
  ASSERT_TRUE(back.ParseFromString(s.SerializeAsString()));
  EXPECT_EQ(back.shingles_size(), static_cast<int>(f.shingles.size()));
  EXPECT_EQ(back.content_digest().size(), 16u);
  EXPECT_EQ(back.shingle_k(), 5u);
}

}  // namespace
}  // namespace neardup
