#include "document/tokenizer.h"

#include <algorithm>
#include <array>

// Inlined: a word is a few bytes, where the call into the shared library costs as much as the hash.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <bit>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

// A-Z to a-z; every other byte as it is.
inline char FoldAscii(char c) {
  return static_cast<char>(c | (static_cast<unsigned>(static_cast<unsigned char>(c) - 'A') < 26u ? 0x20 : 0));
}

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

// Up to where the run of ASCII letters and digits starting at text[i] goes, 16 bytes at a time
// (no branch per byte, and none mispredicted at the run's end unless it is 16 long). *upper: it
// holds an A-Z. *separators: how many bytes after the run are ASCII separators other than an
// apostrophe (bytes a word that has just ended can skip), as far as the last 16 looked at.
template <bool kSimd>
[[gnu::always_inline]] inline size_t AsciiRunEnd(std::string_view text, size_t i, bool* upper, size_t* separators) {
  const size_t n = text.size();
  *upper = false;
  *separators = 0;
  size_t j = i;
#if defined(__SSE2__)
  while (kSimd && j + 16 <= n) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(text.data() + j));
    // Signed compares: bytes >= 0x80 are negative, so they are in no range.
    auto in = [&](char lo, char hi) {
      return _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(static_cast<char>(lo - 1))),
                           _mm_cmplt_epi8(v, _mm_set1_epi8(static_cast<char>(hi + 1))));
    };
    const __m128i up = in('A', 'Z');
    const uint32_t word = static_cast<uint32_t>(_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(in('a', 'z'), up), in('0', '9'))));
    const uint32_t run = static_cast<uint32_t>(std::countr_zero(~word));  // <= 16
    *upper = *upper || (static_cast<uint32_t>(_mm_movemask_epi8(up)) & ((1u << run) - 1)) != 0;
    j += run;
    if (run < 16) {
      const uint32_t other = static_cast<uint32_t>(_mm_movemask_epi8(_mm_or_si128(v, _mm_cmpeq_epi8(v, _mm_set1_epi8('\'')))));
      const uint32_t sep = ~word & ~other & 0xFFFF;  // ASCII, not a word character, not an apostrophe
      *separators = static_cast<size_t>(std::countr_zero(~(sep >> run)));
      return j;
    }
  }
#endif
  while (j < n && kAsciiWord[static_cast<unsigned char>(text[j])] != 0) {
    *upper = *upper || kAsciiWord[static_cast<unsigned char>(text[j])] == kUpper;
    ++j;
  }
  return j;
}

#if defined(__SSE2__)
// The 64 bytes at p as bit masks (bit k for p[k]): ASCII letters and digits, A-Z, and the bytes
// the block scan leaves to the byte scan (an apostrophe, or a byte of a multi-byte character).
struct AsciiBlock {
  uint64_t word = 0, upper = 0, special = 0;
};
[[gnu::always_inline]] inline AsciiBlock ClassifyBlock(const char* p) {
  AsciiBlock b;
  for (int part = 0; part < 4; ++part) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * part));
    auto in = [&](char lo, char hi) {  // signed compares: bytes >= 0x80 are in no range
      return _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(static_cast<char>(lo - 1))),
                           _mm_cmplt_epi8(v, _mm_set1_epi8(static_cast<char>(hi + 1))));
    };
    const __m128i up = in('A', 'Z');
    const __m128i word = _mm_or_si128(_mm_or_si128(in('a', 'z'), up), in('0', '9'));
    const __m128i special = _mm_or_si128(v, _mm_cmpeq_epi8(v, _mm_set1_epi8('\'')));  // sign bit: >= 0x80
    const int shift = 16 * part;
    b.word |= static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(word))) << shift;
    b.upper |= static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(up))) << shift;
    b.special |= static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(special))) << shift;
  }
  return b;
}

// Emits the words of text[*i, ...) that lie whole in 64-byte blocks of plain ASCII, a block at a
// time, and advances *i past them and the separators between them. It stops (leaving *i there)
// at a run of letters and digits that reaches a block's end or an apostrophe or a non-ASCII byte
// (the word may go on past it), at such a byte, or within 64 bytes of the text's end; the byte
// scan takes over from there.
template <typename Emit>
[[gnu::always_inline]] inline void EmitAsciiBlocks(std::string_view text, size_t* i, Emit& emit) {
  while (*i + 64 <= text.size()) {
    const char* p = text.data() + *i;
    const AsciiBlock b = ClassifyBlock(p);
    const int stop = b.special != 0 ? std::countr_zero(b.special) : 64;
    uint64_t runs = stop == 64 ? b.word : b.word & ((uint64_t{1} << stop) - 1);
    int done = stop;  // bytes of the block handled, unless a run reaches the stop
    while (runs != 0) {
      const int a = std::countr_zero(runs);
      const uint64_t after = ~(b.word >> a);  // its bit 0 .. : ones where the run has ended
      const int len = after != 0 ? std::countr_zero(after) : 64 - a;
      if (a + len >= stop) {  // reaches the block's end or a special byte: the word may go on
        done = a;
        break;
      }
      const uint64_t run = ((uint64_t{1} << len) - 1) << a;  // len < 64 here
      if ((b.upper & run) == 0) {
        emit(std::string_view(p + a, static_cast<size_t>(len)));
      } else {
        char folded[64];
        for (int k = 0; k < len; ++k) folded[k] = FoldAscii(p[a + k]);
        emit(std::string_view(folded, static_cast<size_t>(len)));
      }
      runs &= ~run;
    }
    *i += static_cast<size_t>(done);
    if (done < 64) break;
  }
}
#endif

// Walks `text` and calls emit(folded_word) for each word. `word` is scratch space. kSimd = false
// scans runs a byte at a time (the reference the tests hold the SIMD scan to).
template <bool kSimd = true, typename Emit>
void ForEachWord(std::string_view text, std::string& word, Emit&& emit) {
  word.clear();
  size_t i = 0;
  const size_t n = text.size();
  // Where the block scan may start again. One that stops within its first 8 bytes leaves the next
  // `backoff` bytes to the byte scan, twice as many each time it happens again (text in another
  // script, or dense in apostrophes, would stop every block near its start); a scan that gets
  // further starts the count again.
  size_t blocks_from = 0, backoff = 64;
  while (i < n) {
#if defined(__SSE2__)
    if (kSimd && word.empty() && i >= blocks_from) {
      const size_t from = i;
      EmitAsciiBlocks(text, &i, emit);
      if (i >= n) break;
      if (i - from >= 8) {
        backoff = 64;
      } else {
        blocks_from = i + backoff;
        backoff = std::min<size_t>(backoff * 2, 4096);
      }
    }
#endif
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (kAsciiWord[c] != 0) {
        // A run of ASCII letters and digits, scanned in one go. Starting a word and ending at an
        // ASCII separator (or the end), it is a whole word: lower-case only, it is already
        // folded and emitted in place; with capitals, folded into a buffer and emitted from
        // there; either way the separators after it are skipped. Otherwise it is appended
        // folded, and whatever follows (an apostrophe, a non-ASCII letter) is handled below.
        bool upper;
        size_t separators;
        const size_t j = AsciiRunEnd<kSimd>(text, i, &upper, &separators);
        const unsigned char d = j < n ? static_cast<unsigned char>(text[j]) : ' ';
        const bool ends = d < 0x80 && d != '\'';
        if (word.empty() && ends && !upper) {
          emit(text.substr(i, j - i));
          i = j + separators;
          continue;
        }
        constexpr size_t kFoldBuffer = 64;
        if (word.empty() && ends && j - i <= kFoldBuffer) {
          char folded[kFoldBuffer];
          for (size_t k = i; k < j; ++k) folded[k - i] = FoldAscii(text[k]);
          emit(std::string_view(folded, j - i));
          i = j + separators;
          continue;
        }
        const size_t from = word.size();
        word.append(text.data() + i, j - i);
        if (upper) {
          for (size_t k = from; k < word.size(); ++k) word[k] = FoldAscii(word[k]);
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

namespace internal {
std::vector<std::string> TokenizeBytewise(std::string_view text) {
  std::string word;
  std::vector<std::string> out;
  ForEachWord<false>(text, word, [&](std::string_view w) { out.emplace_back(w); });
  return out;
}
}  // namespace internal

}  // namespace neardup
