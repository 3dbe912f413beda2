#include "document/json_lines.h"

#include <spdlog/spdlog.h>

#include <memory>

#include "common/line_reader.h"
#include "common/utf8.h"

namespace neardup {

const char* JsonErrorText(simdjson::error_code code) {
  switch (code) {
    case simdjson::TAPE_ERROR: return "not JSON: malformed";
    case simdjson::UNCLOSED_STRING: return "not JSON: an unclosed string (a truncated line?)";
    case simdjson::EMPTY: return "not JSON: empty";
    case simdjson::DEPTH_ERROR: return "not JSON: nested too deeply";
    case simdjson::STRING_ERROR: return "not JSON: a malformed string";
    case simdjson::NUMBER_ERROR: return "not JSON: a malformed number";
    case simdjson::T_ATOM_ERROR: case simdjson::F_ATOM_ERROR: case simdjson::N_ATOM_ERROR:
      return "not JSON: a malformed literal";
    case simdjson::UTF8_ERROR: return "not JSON: invalid UTF-8";
    default: return "not JSON";
  }
}

Status ParseJsonLine(std::string_view line, const JsonLineOptions& options, simdjson::dom::object* out, bool* repaired) {
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element doc;
  auto err = parser.parse(line.data(), line.size(), /*realloc_if_needed=*/!options.padded).get(doc);
  if (repaired != nullptr) *repaired = false;
  if (err == simdjson::UTF8_ERROR && options.repair_utf8) {
    std::string fixed;
    AppendRepairedUtf8(line, &fixed);
    // The parser copies what it keeps of the line: the document outlives `fixed`.
    err = parser.parse(fixed.data(), fixed.size(), /*realloc_if_needed=*/true).get(doc);
    if (repaired != nullptr) *repaired = true;
  }
  if (err != simdjson::SUCCESS) return InvalidArgument(JsonErrorText(err));
  if (doc.get_object().get(*out) != simdjson::SUCCESS) return InvalidArgument("line is not a JSON object");
  return Status::Ok();
}

StatusOr<JsonLinesStats> ForEachJsonLine(const std::string& path, const JsonLinesOptions& options,
                                         const std::function<Status(std::string_view line, uint64_t number)>& fn) {
  LineReaderOptions lo;
  lo.max_line_bytes = options.max_line_bytes;
  lo.padding = simdjson::SIMDJSON_PADDING;
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> lines, LineReader::Open(path, lo, "input"));
  JsonLinesStats stats;
  // A bad line: skipped and reported (the first 20, then every 1000th), or the loop's error.
  auto bad = [&](uint64_t n, const std::string& reason) -> Status {
    if (!options.skip_bad_lines) return InvalidArgument(path + ":" + std::to_string(n) + ": " + reason);
    ++stats.bad_lines;
    if (stats.bad_lines <= 20 || stats.bad_lines % 1000 == 0) spdlog::warn("{}:{}: skipped: {}", path, n, reason);
    return Status::Ok();
  };
  std::string_view line;
  bool too_long = false;
  while (lines->Next(&line, &too_long)) {
    ++stats.lines;
    const uint64_t n = lines->line_number();
    if (too_long) {
      RETURN_IF_ERROR(bad(n, "line longer than " + std::to_string(options.max_line_bytes) + " bytes"));
      continue;
    }
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    Status s = fn(line, n);
    if (s.code() == StatusCode::kInvalidArgument) {
      RETURN_IF_ERROR(bad(n, s.message()));
      continue;
    }
    RETURN_IF_ERROR(s);
    ++stats.records;
  }
  RETURN_IF_ERROR(lines->status());
  return stats;
}

}  // namespace neardup
