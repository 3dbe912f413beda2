// EmailReader: streams email records from a JSON Lines file in constant memory.
//
// One JSON object per line:
//   id         required string, non-empty: the email's id
//   sender     required string: the sender's address
//   recipient  required string: the recipient's address
//   subject    required string (may be empty)
//   html       required string: the HTML body
//   sent_at    optional RFC 3339 time, e.g. "2024-06-03T00:09:48Z"
// Unknown fields (e.g. an evaluation label) are ignored. Empty lines are skipped silently.
//
// A bad line (not JSON, a missing or mistyped field, a line longer than max_line_bytes) is
// reported through the callback with its 1-based line number and the reason, counted and skipped.
// Reasons name the field, never its content: email data stays out of logs.
//
//   ASSIGN_OR_RETURN(auto reader, EmailReader::Open("emails.jsonl", {}));
//   EmailRecord e;
//   while (reader->Next(&e)) Use(e);
//   RETURN_IF_ERROR(reader->status());   // I/O errors only
//
// Thread safety: an EmailReader is used by one thread at a time.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/config.h"
#include "common/line_reader.h"
#include "common/status.h"

namespace neardup::email {

struct EmailRecord {
  std::string id;
  std::string sender;
  std::string recipient;
  std::string subject;
  std::string html;
  std::optional<int64_t> sent_at_ms;  // milliseconds since the Unix epoch, UTC
  uint64_t line = 0;                  // 1-based line number in the input
};

struct EmailReaderOptions {
  uint64_t max_line_bytes = ConfigDefaults().reader().max_line_bytes();
};

struct EmailReaderStats {
  uint64_t lines = 0;      // lines seen, including empty and bad ones
  uint64_t records = 0;    // records returned by Next()
  uint64_t bad_lines = 0;  // lines reported and skipped
  uint64_t bytes = 0;      // bytes consumed
};

struct EmailBadLine {
  uint64_t line;
  std::string reason;
};

// Parses one line into *out (line number untouched). InvalidArgument naming the field and the
// problem (never the field's content).
Status ParseEmailRecord(std::string_view line, EmailRecord* out);

class EmailReader {
 public:
  // Opens `path` ("-" for standard input). IoError naming the path if it cannot be opened.
  static StatusOr<std::unique_ptr<EmailReader>> Open(const std::string& path, EmailReaderOptions options);
  // Reads from an already open stream, which the reader does not close.
  static std::unique_ptr<EmailReader> FromStream(std::FILE* stream, EmailReaderOptions options);
  ~EmailReader();
  EmailReader(const EmailReader&) = delete;
  EmailReader& operator=(const EmailReader&) = delete;

  // Called for each bad line. Default: log a warning with the line number and reason (the first
  // 20, then every 1000th).
  void set_on_bad_line(std::function<void(const EmailBadLine&)> f) { on_bad_line_ = std::move(f); }

  // Fills *record with the next good record and returns true; false at the end of the input or
  // on an I/O error (then status() says which).
  bool Next(EmailRecord* record);

  const Status& status() const { return lines_->status(); }
  const EmailReaderStats& stats() const { return stats_; }
  // "1074 emails from 1075 lines, 1 bad line skipped".
  std::string Summary() const;

 private:
  EmailReader(std::unique_ptr<LineReader> lines, EmailReaderOptions options, std::string name);
  void Report(uint64_t line, std::string reason);

  std::unique_ptr<LineReader> lines_;
  EmailReaderOptions options_;
  std::string name_;
  EmailReaderStats stats_;
  std::function<void(const EmailBadLine&)> on_bad_line_;
};

}  // namespace neardup::email
