#include "common/json_write.h"

#include <charconv>
#include <cmath>

#include "common/utf8.h"

namespace neardup {

void AppendJsonString(std::string* out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  out->push_back('"');
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    // A run of printable ASCII without a quote or backslash (most of a URL) goes in one append.
    size_t j = i;
    while (j < n && p[j] >= 0x20 && p[j] < 0x80 && p[j] != '"' && p[j] != '\\') ++j;
    if (j > i) {
      out->append(s.data() + i, j - i);
      i = j;
      continue;
    }
    const unsigned char c = p[i];
    if (c < 0x80) {
      switch (c) {
        case '"': out->append("\\\""); break;
        case '\\': out->append("\\\\"); break;
        case '\n': out->append("\\n"); break;
        case '\r': out->append("\\r"); break;
        case '\t': out->append("\\t"); break;
        default:
          if (c < 0x20) {
            out->append("\\u00");
            out->push_back(kHex[c >> 4]);
            out->push_back(kHex[c & 15]);
          } else {
            out->push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    // A multi-byte sequence: copied if valid, else U+FFFD.
    const size_t at = i;
    if (DecodeUtf8(s, &i) == kInvalidCodePoint) out->append("\xEF\xBF\xBD");
    else out->append(s.substr(at, i - at));
  }
  out->push_back('"');
}

void AppendJsonNumber(std::string* out, double v) {
  if (!std::isfinite(v)) { out->append("null"); return; }
  // printf's %.6g, without printf's parsing and locale (C++17: to_chars with a precision is
  // specified as printf with that conversion in the C locale).
  char buf[32];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6);
  out->append(buf, r.ptr);
}

void AppendJsonField(std::string* out, std::string_view key, double value) {
  if (!out->empty() && out->back() != '{') out->push_back(',');
  AppendJsonString(out, key);
  out->push_back(':');
  AppendJsonNumber(out, value);
}

}  // namespace neardup
