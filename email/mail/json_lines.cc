#include "email/mail/json_lines.h"

#include <simdjson.h>
#include <spdlog/spdlog.h>

#include "common/line_reader.h"

namespace neardup::email {

StatusOr<JsonLinesStats> ForEachJsonLine(const std::string& path, uint64_t max_line_bytes,
                                         const std::function<Status(std::string_view, uint64_t)>& fn) {
  LineReaderOptions lo;
  lo.max_line_bytes = max_line_bytes;
  lo.padding = simdjson::SIMDJSON_PADDING;
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> lines, LineReader::Open(path, lo, "input"));
  JsonLinesStats stats;
  auto report = [&](uint64_t n, const std::string& reason) {
    ++stats.bad_lines;
    if (stats.bad_lines <= 20 || stats.bad_lines % 1000 == 0) spdlog::warn("{}:{}: skipped: {}", path, n, reason);
  };
  std::string_view line;
  bool too_long = false;
  while (lines->Next(&line, &too_long)) {
    ++stats.lines;
    const uint64_t n = lines->line_number();
    if (too_long) {
      report(n, "line longer than " + std::to_string(max_line_bytes) + " bytes");
      continue;
    }
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    Status s = fn(line, n);
    if (s.code() == StatusCode::kInvalidArgument) {
      report(n, s.message());
      continue;
    }
    RETURN_IF_ERROR(s);
    ++stats.records;
  }
  RETURN_IF_ERROR(lines->status());
  return stats;
}

}  // namespace neardup::email
