// The JSON Lines records of the unified threads and domain counts commands, and the line loop that
// reports bad lines with their numbers and skips them.
//
// An email of a mailbox (neardup email threads ingest):
//   {"gid": "u7", "thread": "th18f2", "message_id": "<a1@mail.example>", "team": "acme"}
//   gid and thread required (non-empty strings; gid without ':'); message_id and team optional
//   (absent, null or empty: none).
// Domain records: email/domain_counts.h.
//
// Thread safety: pure functions; ForEachJsonLine uses the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "email/domain_counts.h"
#include "email/thread_weaver.h"

namespace neardup::email {

// InvalidArgument naming the field and the problem, never its content.
Status ParseThreadEmail(std::string_view line, ThreadEmail* out);
std::string ThreadEmailJson(const ThreadEmail& e);

// A lookup's answer, one JSON object (no newline):
//   {"gid","thread","known":bool,"threads":[...],"unified":[...],"spam_ignored":n}
std::string UnifiedThreadJson(std::string_view gid, std::string_view thread, const UnifiedThread& u);
// A classification, one JSON object (no newline):
//   {"team","invitee","class":"internal|external","reason","members","guests","team_members"}
std::string ClassificationJson(std::string_view team, std::string_view invitee, const Classification& c);
// One key's count: {"team","domain","role","count"} (no newline).
std::string DomainCountJson(const DomainKey& k, int64_t count);

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
