#include "gencrawl/vocabulary.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

namespace neardup::gencrawl {

const char* const kOnsets[36] = {"b",  "c",  "d",  "f",  "g",  "h",  "j",  "k",  "l",  "m",  "n",  "p",
                                 "r",  "s",  "t",  "v",  "w",  "z",  "br", "ch", "cl", "cr", "dr", "fl",
                                 "gr", "kr", "pl", "pr", "sh", "sl", "sp", "st", "th", "tr", "qu", "gl"};
const char* const kNuclei[20] = {"a", "e", "i", "o", "u", "a", "e", "i", "o", "a",
                                 "e", "ai", "ea", "ie", "ou", "oo", "y", "au", "ei", "o"};
const char* const kAccented[7] = {"\xC3\xA9", "\xC3\xA8", "\xC3\xBC", "\xC3\xB6",
                                  "\xC3\xA4", "\xC3\xA0", "\xC3\xAF"};
const char* const kCodas[12] = {"n", "r", "s", "t", "l", "m", "nd", "st", "rk", "ng", "x", "ck"};

namespace {

std::vector<double> ZipfWeights() {
  std::vector<double> w(kVocabSize);
  for (uint32_t i = 0; i < kVocabSize; ++i) w[i] = 1.0 / static_cast<double>(i + 1);
  return w;
}

}  // namespace

Vocabulary::Vocabulary() : zipf(ZipfWeights()) {
  Rng r(0x6E6561726475702Bull);
  std::unordered_set<std::string> seen;
  words.reserve(kVocabSize);
  flags.reserve(kVocabSize);
  for (uint32_t rank = 0; rank < kVocabSize; ++rank) {
    std::string w;
    for (int attempt = 0;; ++attempt) {
      w.clear();
      if (rank >= 40 && r.Chance(0.012)) {
        w = r.Chance(0.4) ? std::to_string(1950 + r.Below(75)) : std::to_string(r.Below(1000) + attempt);
      } else {
        int syl = rank < 150 ? 1 : rank < 2500 ? 1 + static_cast<int>(r.Below(2))
                                 : rank < 25000 ? 2 + static_cast<int>(r.Below(2))
                                                : 2 + static_cast<int>(r.Below(3));
        syl += attempt / 8;
        for (int s = 0; s < syl; ++s) {
          w += Pick(r, kOnsets);
          w += r.Chance(0.025) ? Pick(r, kAccented) : Pick(r, kNuclei);
        }
        if (r.Chance(0.3)) w += Pick(r, kCodas);
      }
      if (seen.insert(w).second) break;
    }
    uint8_t f = 0;
    const bool letters = std::all_of(w.begin(), w.end(), [](char c) { return c >= 'a' && c <= 'z'; });
    if (letters) f |= kFlagAsciiLetters;
    if (letters && w.size() >= 4 && r.Chance(0.03)) f |= kFlagContraction;
    words.push_back(std::move(w));
    flags.push_back(f);
  }
  for (uint32_t i = 0; i < kVocabSize && url_words.size() < 4000; ++i) {
    if ((flags[i] & kFlagAsciiLetters) && words[i].size() >= 3) url_words.push_back(i);
  }
}

const Vocabulary& GetVocabulary() {
  static const Vocabulary* const v = new Vocabulary();
  return *v;
}

void AppendUint(std::string* out, uint64_t v) {
  char buf[24];
  char* p = buf + sizeof buf;
  do {
    *--p = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  out->append(p, static_cast<size_t>(buf + sizeof buf - p));
}

void AppendHex(std::string* out, uint64_t v, int digits) {
  static const char kHex[] = "0123456789abcdef";
  for (int i = digits - 1; i >= 0; --i) out->push_back(kHex[(v >> (4 * (i % 16))) & 15]);
}

void AppendCapitalized(std::string* out, std::string_view w) {
  if (w.empty()) return;
  const char c = w[0];
  out->push_back(c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c);
  out->append(w.substr(1));
}

}  // namespace neardup::gencrawl
