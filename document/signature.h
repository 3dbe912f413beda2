// Signer: page text -> everything the tiers compare (shingle set, length vectors, digest).
//
//   Signer signer({.k = 5, .dims = 3});
//   PageFeatures f;
//   signer.Sign(text, &f);
//   pb::PageSignature sig = ToProto(url, f, signer.options());
//
// Thread safety: a Signer is immutable after construction and may be shared; Sign() keeps its
// scratch space thread-local.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "proto/neardup.pb.h"

namespace neardup {

struct SignerOptions {
  // Words per shingle and sub-dictionaries (length dimensions); defaults and ranges: the
  // configuration's shingle section (proto/config.proto).
  int k = static_cast<int>(ConfigDefaults().shingle().k());
  int dims = static_cast<int>(ConfigDefaults().shingle().dims());
};

// Checks the ranges above; the error names the offending option.
Status ValidateSignerOptions(const SignerOptions& options);

struct PageFeatures {
  std::vector<uint64_t> shingles;        // sorted unique XXH3-64 shingle hashes
  std::vector<uint32_t> length_vector;   // L(A_i): word occurrences per sub-dictionary
  std::vector<uint32_t> shingle_vector;  // unique shingles per sub-dictionary of the first word
  std::array<uint8_t, 16> digest{};      // XXH3-128 of the word-hash sequence
  uint32_t word_count = 0;
};

class Signer {
 public:
  explicit Signer(SignerOptions options) : options_(options) {}
  const SignerOptions& options() const { return options_; }

  // Fills *out from visible text (see tokenizer.h for what a word is). Never fails: text with no
  // words yields an empty shingle set, zero vectors and the digest of the empty sequence.
  void Sign(std::string_view text, PageFeatures* out) const;

 private:
  SignerOptions options_;
};

pb::PageSignature ToProto(std::string_view url, const PageFeatures& f, const SignerOptions& options);

// Checks a signature received from elsewhere: hashes sorted and unique, vectors of equal
// dimension, the shingle vector summing to the set size. The error says which check failed.
Status ValidateSignature(const pb::PageSignature& sig);

}  // namespace neardup
