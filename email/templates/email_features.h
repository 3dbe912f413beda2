// Email features: what the module computes from one email, once.
//
//  - Structure: the set of tag-only XPaths of the email's elements, each step with the element's
//    index among its same-tag siblings (/html[0]/body[0]/table[0]/tr[1]/td[2]), from the document
//    model's HTML5 parser (document/html_text.h); and its three MinHash values with fixed seeds
//    (the Crusher paper's Section 2.1).
//  - Text: the visible text of each element as (XPath, text) blocks, and the shingle set of the
//    subject and the text (document/shingle.h) with every number-bearing word folded to one word,
//    so that order numbers, prices and dates do not make two instances of a template differ.
//  - Cluster keys (ClusterKeys): in the `paper` mode the three MinHash values; in the `verified`
//    mode each MinHash value combined with the canonical sender, so templates of different senders
//    never share a row.
//
//   ASSIGN_OR_RETURN(auto extractor, FeatureExtractor::Create(5));
//   EmailFeatures f;
//   RETURN_IF_ERROR(extractor->Extract(record, &f));
//   auto keys = ClusterKeys(FingerprintMode::kVerified, f);
//
// Thread safety: a FeatureExtractor owns a parser and is used by one thread at a time; the free
// functions are pure.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "document/html_text.h"
#include "email/templates/email_reader.h"
#include "proto/email.pb.h"

namespace neardup::email {

enum class FingerprintMode { kPaper, kVerified };

// "paper" or "verified"; InvalidArgument naming the value otherwise.
StatusOr<FingerprintMode> ParseFingerprintMode(std::string_view name);
const char* FingerprintModeName(FingerprintMode mode);

inline constexpr int kMinHashes = 3;
// The fixed seeds of the three MinHash values.
inline constexpr std::array<uint64_t, kMinHashes> kMinHashSeeds = {0x243F6A8885A308D3ull, 0x13198A2E03707344ull,
                                                                   0xA4093822299F31D0ull};

struct TextBlock {
  std::string xpath;
  std::string text;  // whitespace collapsed, trimmed; text nodes of one element joined by a space
};

struct EmailFeatures {
  std::vector<std::string> xpaths;            // every element's XPath, in document order
  std::vector<TextBlock> blocks;              // visible text per element, in document order
  std::array<uint64_t, kMinHashes> minhash{}; // of the XPath set; all 0 for an email without elements
  std::vector<uint64_t> shingles;             // sorted unique, of the subject and the visible text
  uint64_t sender = 0;                        // hash of the canonical sender address
  uint64_t recipient = 0;                     // hash of the canonical recipient address
};

// Lower-case, surrounding spaces and a display name ("Name <a@b>") removed, and a "+tag" of the
// local part dropped: "Shop <NoReply+42@Shop.Example>" -> "noreply@shop.example".
std::string CanonicalAddress(std::string_view address);
uint64_t AddressHash(std::string_view address);

// MinHash i of a set of XPaths: the least XXH3-64 (seed kMinHashSeeds[i]) over its members; 0 for
// the empty set.
uint64_t XPathMinHash(const std::vector<std::string>& xpaths, int i);

// The rows an email goes to: its kMinHashes cluster keys in the mode.
std::array<uint64_t, kMinHashes> ClusterKeys(FingerprintMode mode, const EmailFeatures& f);

// Shingles of a subject and body text: words as the tokenizer makes them, a word with a digit
// replaced by one placeholder word; the subject's words live in their own word space (the same
// words in the subject and the body make different shingles). Sorted unique.
std::vector<uint64_t> TextShingles(std::string_view subject, const std::vector<TextBlock>& blocks, int k);

class FeatureExtractor {
 public:
  // shingle_k >= 1. Internal if the parser cannot be created.
  static StatusOr<std::unique_ptr<FeatureExtractor>> Create(int shingle_k);

  // Fills *out from the record. Internal if the parser fails (out of memory); any bytes parse.
  Status Extract(const EmailRecord& record, EmailFeatures* out);

 private:
  FeatureExtractor(std::unique_ptr<HtmlToText> parser, int k) : parser_(std::move(parser)), k_(k) {}
  std::unique_ptr<HtmlToText> parser_;
  int k_;
};

// What a cluster row stores of an email (no addresses: the recipient as its hash).
pb::StoredEmail ToStored(const EmailRecord& record, const EmailFeatures& f,
                         const std::array<uint64_t, kMinHashes>& keys);

}  // namespace neardup::email
