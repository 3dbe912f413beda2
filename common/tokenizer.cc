#include "common/tokenizer.h"

#include <array>

// Inlined: a word is a few bytes, where the call into the shared library costs as much as the hash.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common/utf8.h"

namespace neardup {
namespace {

constexpr uint32_t kInvalid = kInvalidCodePoint;

// ASCII word characters: kLower for a-z and 0-9 (already folded), kUpper for A-Z.
constexpr uint8_t kLower = 1, kUpper = 2;
constexpr auto kAsciiWord = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 'a'; c <= 'z'; ++c) t[c] = kLower;
  for (int c = '0'; c <= '9'; ++c) t[c] = kLower;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] = kUpper;
  return t;
}();

enum class CharClass { kSeparator, kWord, kSingle, kApostrophe };

inline CharClass Classify(uint32_t cp) {
  if (cp < 0x80) {
    if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9')) return CharClass::kWord;
    return cp == '\'' ? CharClass::kApostrophe : CharClass::kSeparator;
  }
  if (cp >= 0xC0 && cp <= 0x24F) return (cp == 0xD7 || cp == 0xF7) ? CharClass::kSeparator : CharClass::kWord;
  if (cp >= 0x370 && cp <= 0x4FF) {
    // Greek and Cyrillic letters; skip Greek punctuation-like code points.
    if (cp == 0x37E || cp == 0x387 || cp == 0x375 || cp == 0x482) return CharClass::kSeparator;
    return CharClass::kWord;
  }
  if (cp >= 0x1E00 && cp <= 0x1EFF) return CharClass::kWord;
  if (cp == 0x2019) return CharClass::kApostrophe;
  if ((cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x3040 && cp <= 0x30FF) ||
      (cp >= 0xAC00 && cp <= 0xD7AF))
    return CharClass::kSingle;
  return CharClass::kSeparator;
}

inline uint32_t Fold(uint32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 32;
  if (cp >= 0x100 && cp <= 0x17F) {
    if ((cp <= 0x137 || (cp >= 0x14A && cp <= 0x177)) && cp % 2 == 0) return cp + 1;
    if (((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E)) && cp % 2 == 1) return cp + 1;
    if (cp == 0x178) return 0xFF;
    return cp;
  }
  if (cp >= 0x391 && cp <= 0x3AB && cp != 0x3A2) return cp + 32;
  if (cp >= 0x410 && cp <= 0x42F) return cp + 32;
  if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
  return cp;
}

// Walks `text` and calls emit(folded_word) for each word. `word` is scratch space.
template <typename Emit>
void ForEachWord(std::string_view text, std::string& word, Emit&& emit) {
  word.clear();
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (kAsciiWord[c] != 0) {
        // A run of ASCII letters and digits, scanned in one go. Lower-case only, starting a word
        // and ending at an ASCII separator (or the end): already a folded word, emitted in place.
        // Otherwise it is appended folded, and whatever follows (an apostrophe, a non-ASCII
        // letter) is handled below as before.
        size_t j = i;
        uint8_t kinds = 0;
        while (j < n && kAsciiWord[static_cast<unsigned char>(text[j])] != 0) {
          kinds |= kAsciiWord[static_cast<unsigned char>(text[j])];
          ++j;
        }
        const unsigned char d = j < n ? static_cast<unsigned char>(text[j]) : ' ';
        const bool ends = d < 0x80 && d != '\'';
        if (word.empty() && ends && kinds == kLower) {
          emit(text.substr(i, j - i));
          i = j;
          continue;
        }
        const size_t from = word.size();
        word.append(text.data() + i, j - i);
        if (kinds & kUpper) {
          for (size_t k = from; k < word.size(); ++k) {
            if (word[k] >= 'A' && word[k] <= 'Z') word[k] = static_cast<char>(word[k] + 32);
          }
        }
        i = j;
        continue;
      }
      ++i;
      if (c == '\'' && !word.empty() && i < n) {
        size_t j = i;
        if (Classify(DecodeUtf8(text, &j)) == CharClass::kWord) continue;  // joins the word
      }
      if (!word.empty()) { emit(std::string_view(word)); word.clear(); }
      continue;
    }
    const uint32_t cp = DecodeUtf8(text, &i);
    const CharClass cls = cp == kInvalid ? CharClass::kSeparator : Classify(cp);
    switch (cls) {
      case CharClass::kWord:
        AppendUtf8(Fold(cp), &word);
        break;
      case CharClass::kApostrophe: {
        if (!word.empty() && i < n) {
          size_t j = i;
          if (Classify(DecodeUtf8(text, &j)) == CharClass::kWord) break;
        }
        if (!word.empty()) { emit(std::string_view(word)); word.clear(); }
        break;
      }
      case CharClass::kSingle:
        if (!word.empty()) { emit(std::string_view(word)); word.clear(); }
        AppendUtf8(cp, &word);
        emit(std::string_view(word));
        word.clear();
        break;
      case CharClass::kSeparator:
        if (!word.empty()) { emit(std::string_view(word)); word.clear(); }
        break;
    }
  }
  if (!word.empty()) { emit(std::string_view(word)); word.clear(); }
}

}  // namespace

uint64_t WordHash(std::string_view folded_word) { return XXH3_64bits(folded_word.data(), folded_word.size()); }

size_t HashWords(std::string_view text, std::vector<uint64_t>* word_hashes) {
  thread_local std::string word;
  const size_t before = word_hashes->size();
  ForEachWord(text, word, [&](std::string_view w) { word_hashes->push_back(WordHash(w)); });
  return word_hashes->size() - before;
}

std::vector<std::string> Tokenize(std::string_view text) {
  std::string word;
  std::vector<std::string> out;
  ForEachWord(text, word, [&](std::string_view w) { out.emplace_back(w); });
  return out;
}

}  // namespace neardup
