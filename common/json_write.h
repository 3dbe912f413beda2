// Minimal JSON output helpers for the JSON Lines files neardup writes (pairs, groups, crawls).
// Reading JSON is simdjson's job (crawl_reader.h); writing a flat object needs only escaping.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace neardup {

// Appends `s` as a quoted JSON string. Control characters, quotes and backslashes are escaped;
// bytes that are not valid UTF-8 are replaced by U+FFFD so the output is always valid JSON.
void AppendJsonString(std::string* out, std::string_view s);

// Appends a double with up to 6 significant decimals ("0.923077"); non-finite values as null.
void AppendJsonNumber(std::string* out, double v);

// Appends `,"key":value` to an object being built (no comma right after its opening '{').
void AppendJsonField(std::string* out, std::string_view key, double value);

}  // namespace neardup
