// The language of the synthetic web: ~80,000 syllable-made pseudo-words with Zipf frequencies, the
// syllables themselves (host names are made of them too), and the helpers that spell words and
// numbers into page text and URLs. Used by every part of the generator that writes words.
//
// The vocabulary is fixed (independent of the seed), like a language, and built once per process.
//
// Thread safety: GetVocabulary() is thread-safe and the Vocabulary immutable; the helpers are pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gencrawl/random.h"

namespace neardup::gencrawl {

constexpr uint32_t kVocabSize = 80000;
constexpr uint8_t kFlagAsciiLetters = 1;  // only a-z: usable in URLs and code
constexpr uint8_t kFlagContraction = 2;   // may be rendered with an apostrophe before its last letter

// Syllable parts: onsets, plain and accented nuclei, codas.
extern const char* const kOnsets[36];
extern const char* const kNuclei[20];
extern const char* const kAccented[7];
extern const char* const kCodas[12];

template <size_t N>
const char* Pick(Rng& r, const char* const (&arr)[N]) {
  return arr[r.Below(N)];
}

// Rank r has Zipf weight 1/(r+1).
struct Vocabulary {
  std::vector<std::string> words;
  std::vector<uint8_t> flags;
  std::vector<uint32_t> url_words;  // common a-z words for slugs, nav links, CSS and JS identifiers
  AliasTable zipf;

  Vocabulary();

  uint32_t Sample(Rng& r) const { return zipf.Sample(r); }
  const std::string& UrlWord(Rng& r) const { return words[url_words[r.Below(url_words.size())]]; }
  const std::string& UrlWord(uint64_t h) const { return words[url_words[h % url_words.size()]]; }
};

const Vocabulary& GetVocabulary();

// Appends `v` in decimal.
void AppendUint(std::string* out, uint64_t v);
// Appends the low 4 * `digits` bits of `v` (repeated past 16 digits) in lowercase hex.
void AppendHex(std::string* out, uint64_t v, int digits);
// Appends `w` with its first byte upper-cased when it is a-z.
void AppendCapitalized(std::string* out, std::string_view w);

}  // namespace neardup::gencrawl
