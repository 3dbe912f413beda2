// UTF-8 helpers: one decoder that every reader of text in neardup shares, so that the tokenizer,
// the crawl reader, the HTML extractor and the JSON writer agree on what is valid.
//
// Valid means RFC 3629: no overlong forms, no surrogates (U+D800..U+DFFF), nothing above U+10FFFF.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace neardup {

inline constexpr uint32_t kInvalidCodePoint = 0xFFFFFFFF;

// Decodes the code point starting at s[*i] and advances *i past it. An invalid, overlong,
// surrogate or truncated sequence yields kInvalidCodePoint and advances by one byte.
inline uint32_t DecodeUtf8(std::string_view s, size_t* i) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t at = *i;
  const unsigned char c = p[at];
  if (c < 0x80) { *i = at + 1; return c; }
  uint32_t cp, min;
  size_t len;
  if ((c & 0xE0) == 0xC0) { cp = c & 0x1F; len = 2; min = 0x80; }
  else if ((c & 0xF0) == 0xE0) { cp = c & 0x0F; len = 3; min = 0x800; }
  else if ((c & 0xF8) == 0xF0) { cp = c & 0x07; len = 4; min = 0x10000; }
  else { *i = at + 1; return kInvalidCodePoint; }
  if (at + len > s.size()) { *i = at + 1; return kInvalidCodePoint; }
  for (size_t k = 1; k < len; ++k) {
    const unsigned char cc = p[at + k];
    if ((cc & 0xC0) != 0x80) { *i = at + 1; return kInvalidCodePoint; }
    cp = (cp << 6) | (cc & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) { *i = at + 1; return kInvalidCodePoint; }
  *i = at + len;
  return cp;
}

// True when s is entirely valid UTF-8.
bool IsValidUtf8(std::string_view s);

// Appends s to *out with every invalid byte replaced by U+FFFD (EF BF BD).
void AppendRepairedUtf8(std::string_view s, std::string* out);

// Appends the UTF-8 encoding of a valid code point.
void AppendUtf8(uint32_t cp, std::string* out);

}  // namespace neardup
