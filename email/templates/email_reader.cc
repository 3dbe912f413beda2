#include "email/templates/email_reader.h"

#include <simdjson.h>
#include <spdlog/spdlog.h>


#include "common/rfc3339.h"
#include "document/json_fields.h"
#include "document/json_lines.h"

namespace neardup::email {

Status ParseEmailRecord(std::string_view line, EmailRecord* out) {
  simdjson::dom::object obj;
  RETURN_IF_ERROR(ParseJsonLine(line, {.repair_utf8 = true}, &obj));
  RETURN_IF_ERROR(RequiredJsonString(obj, "id", &out->id));
  if (out->id.empty()) return JsonFieldError("id", "must not be empty");
  RETURN_IF_ERROR(RequiredJsonString(obj, "sender", &out->sender));
  if (out->sender.empty()) return JsonFieldError("sender", "must not be empty");
  RETURN_IF_ERROR(RequiredJsonString(obj, "recipient", &out->recipient));
  if (out->recipient.empty()) return JsonFieldError("recipient", "must not be empty");
  RETURN_IF_ERROR(RequiredJsonString(obj, "subject", &out->subject));
  RETURN_IF_ERROR(RequiredJsonString(obj, "html", &out->html));
  std::string sent_at;
  bool present = false;
  RETURN_IF_ERROR(OptionalJsonString(obj, "sent_at", &sent_at, &present));
  out->sent_at_ms.reset();
  if (present) {
    const auto t = ParseRfc3339(sent_at);
    if (!t) return JsonFieldError("sent_at", "is not an RFC 3339 time");
    out->sent_at_ms = *t;
  }
  return Status::Ok();
}

namespace {

LineReaderOptions LinesOf(const EmailReaderOptions& o) {
  LineReaderOptions l;
  l.max_line_bytes = o.max_line_bytes;
  return l;
}

}  // namespace

StatusOr<std::unique_ptr<EmailReader>> EmailReader::Open(const std::string& path, EmailReaderOptions options) {
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> lines,
                   LineReader::Open(path, LinesOf(options), "emails"));
  return std::unique_ptr<EmailReader>(new EmailReader(std::move(lines), options, path));
}

std::unique_ptr<EmailReader> EmailReader::FromStream(std::FILE* stream, EmailReaderOptions options) {
  return std::unique_ptr<EmailReader>(
      new EmailReader(LineReader::FromStream(stream, LinesOf(options)), options, "-"));
}

EmailReader::EmailReader(std::unique_ptr<LineReader> lines, EmailReaderOptions options, std::string name)
    : lines_(std::move(lines)), options_(options), name_(std::move(name)) {}

EmailReader::~EmailReader() = default;

void EmailReader::Report(uint64_t line, std::string reason) {
  ++stats_.bad_lines;
  EmailBadLine bad{line, std::move(reason)};
  if (on_bad_line_) {
    on_bad_line_(bad);
    return;
  }
  if (stats_.bad_lines <= 20 || stats_.bad_lines % 1000 == 0) {
    spdlog::warn("{}:{}: skipped: {}", name_, bad.line, bad.reason);
  }
}

bool EmailReader::Next(EmailRecord* record) {
  bool too_long = false;
  std::string_view text;
  while (lines_->Next(&text, &too_long)) {
    const uint64_t line = stats_.lines = lines_->line_number();
    stats_.bytes = lines_->bytes();
    if (too_long) {
      Report(line, "line longer than " + std::to_string(options_.max_line_bytes) + " bytes");
      continue;
    }
    if (text.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    Status s = ParseEmailRecord(text, record);
    if (!s.ok()) {
      Report(line, s.message());
      continue;
    }
    record->line = line;
    ++stats_.records;
    return true;
  }
  return false;
}

std::string EmailReader::Summary() const {
  std::string s = std::to_string(stats_.records) + " emails from " + std::to_string(stats_.lines) + " lines";
  if (stats_.bad_lines > 0) {
    s += ", " + std::to_string(stats_.bad_lines) + (stats_.bad_lines == 1 ? " bad line" : " bad lines") + " skipped";
  }
  return s;
}

}  // namespace neardup::email
