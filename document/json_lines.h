// JSON Lines: the one way a record's line becomes a JSON object, and the one loop over a file of
// them. Every reader of JSON Lines (crawl records, emails, mailbox and domain records, groups and
// status files, labels) parses its lines here and checks its fields with document/json_fields.h.
//
//   simdjson::dom::object obj;
//   RETURN_IF_ERROR(ParseJsonLine(line, {.padded = true}, &obj));
//   RETURN_IF_ERROR(RequiredJsonString(obj, "url", &url));
//
//   ASSIGN_OR_RETURN(JsonLinesStats stats, ForEachJsonLine(path, {.max_line_bytes = n},
//       [&](std::string_view line, uint64_t number) { ... return Status::Ok(); }));
//
// Thread safety: ParseJsonLine parses with a parser of the calling thread (an object it gave is
// valid until the thread's next call); ForEachJsonLine runs fn on the calling thread.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace neardup {

struct JsonLineOptions {
  // The line has simdjson::SIMDJSON_PADDING readable bytes allocated past its end (LineReader's
  // `padding`): parsed in place rather than copied.
  bool padded = false;
  // Invalid UTF-8 is replaced (U+FFFD, common/utf8.h) and the line parsed again, rather than refused.
  bool repair_utf8 = false;
};

// Parses one line into its top-level object (*out), with the calling thread's parser: *out stays
// valid until that thread's next ParseJsonLine. *repaired (may be null) says whether the UTF-8
// was repaired. InvalidArgument "not JSON: <why>" (the error in words, never the line's content)
// or "line is not a JSON object".
Status ParseJsonLine(std::string_view line, const JsonLineOptions& options, simdjson::dom::object* out,
                     bool* repaired = nullptr);
// simdjson's error in words a user reads ("unclosed string", "invalid UTF-8", ...).
const char* JsonErrorText(simdjson::error_code code);

struct JsonLinesOptions {
  uint64_t max_line_bytes = uint64_t{8} << 20;
  // A line fn refuses with InvalidArgument, or too long: reported ("path:N: skipped: reason", the
  // first 20, then every 1000th), counted and skipped when true; returned as the loop's error
  // ("path:N: reason") when false.
  bool skip_bad_lines = true;
};

struct JsonLinesStats {
  uint64_t lines = 0, records = 0, bad_lines = 0;
};

// Calls fn(line, line_number) for every non-blank line of `path` ("-": standard input); the line
// has simdjson::SIMDJSON_PADDING bytes allocated past its end (parse it with {.padded = true}).
// Bad lines as options.skip_bad_lines says; any other error of fn stops the loop and is returned.
// IoError when the file cannot be read.
StatusOr<JsonLinesStats> ForEachJsonLine(const std::string& path, const JsonLinesOptions& options,
                                         const std::function<Status(std::string_view line, uint64_t number)>& fn);

}  // namespace neardup
