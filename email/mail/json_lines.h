// The line loop of the unified threads and domain counts inputs: every non-blank line of a JSON
// Lines file handed to a parser, bad lines reported with their numbers and skipped.
//
// Thread safety: ForEachJsonLine uses the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace neardup::email {

struct JsonLinesStats {
  uint64_t lines = 0, records = 0, bad_lines = 0;
};

// Calls fn(line, line_number) for every non-blank line of `path` ("-": standard input). A line fn
// refuses with InvalidArgument, or longer than max_line_bytes, is reported as "path:N: skipped:
// reason" (the first 20, then every 1000th) and counted; any other error of fn stops the loop
// and is returned. IoError when the file cannot be read.
StatusOr<JsonLinesStats> ForEachJsonLine(const std::string& path, uint64_t max_line_bytes,
                                         const std::function<Status(std::string_view line, uint64_t number)>& fn);

}  // namespace neardup::email
