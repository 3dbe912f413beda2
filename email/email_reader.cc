#include "email/email_reader.h"

#include <simdjson.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

#include "common/rfc3339.h"
#include "common/utf8.h"

namespace neardup::email {
namespace {

constexpr size_t kReadBuffer = 1 << 20;

Status FieldError(const char* field, const char* what) {
  return InvalidArgument(std::string("field '") + field + "' " + what);
}

// A string field; *present tells whether it was there (null counts as absent).
Status StringField(simdjson::dom::object& obj, const char* field, std::string* out, bool* present) {
  simdjson::dom::element e;
  *present = false;
  if (obj[field].get(e) != simdjson::SUCCESS || e.is_null()) return Status::Ok();
  std::string_view v;
  if (e.get_string().get(v) != simdjson::SUCCESS) return FieldError(field, "must be a string");
  out->assign(v);
  *present = true;
  return Status::Ok();
}

Status RequiredString(simdjson::dom::object& obj, const char* field, std::string* out) {
  bool present = false;
  RETURN_IF_ERROR(StringField(obj, field, out, &present));
  if (!present) return InvalidArgument(std::string("missing required field '") + field + "'");
  return Status::Ok();
}

}  // namespace

Status ParseEmailRecord(std::string_view line, EmailRecord* out) {
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string repaired;
  auto err = parser.parse(line.data(), line.size(), true).get(doc);
  if (err == simdjson::UTF8_ERROR) {
    AppendRepairedUtf8(line, &repaired);
    err = parser.parse(repaired.data(), repaired.size(), true).get(doc);
  }
  if (err != simdjson::SUCCESS) return InvalidArgument(std::string("not JSON: ") + simdjson::error_message(err));
  simdjson::dom::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) return InvalidArgument("line is not a JSON object");
  RETURN_IF_ERROR(RequiredString(obj, "id", &out->id));
  if (out->id.empty()) return FieldError("id", "must not be empty");
  RETURN_IF_ERROR(RequiredString(obj, "sender", &out->sender));
  if (out->sender.empty()) return FieldError("sender", "must not be empty");
  RETURN_IF_ERROR(RequiredString(obj, "recipient", &out->recipient));
  if (out->recipient.empty()) return FieldError("recipient", "must not be empty");
  RETURN_IF_ERROR(RequiredString(obj, "subject", &out->subject));
  RETURN_IF_ERROR(RequiredString(obj, "html", &out->html));
  std::string sent_at;
  bool present = false;
  RETURN_IF_ERROR(StringField(obj, "sent_at", &sent_at, &present));
  out->sent_at_ms.reset();
  if (present) {
    const auto t = ParseRfc3339(sent_at);
    if (!t) return FieldError("sent_at", "is not an RFC 3339 time");
    out->sent_at_ms = *t;
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<EmailReader>> EmailReader::Open(const std::string& path, EmailReaderOptions options) {
  if (path == "-") return FromStream(stdin, options);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return IoError("cannot open emails " + path + ": " + std::strerror(errno));
  return std::unique_ptr<EmailReader>(new EmailReader(f, true, options, path));
}

std::unique_ptr<EmailReader> EmailReader::FromStream(std::FILE* stream, EmailReaderOptions options) {
  return std::unique_ptr<EmailReader>(new EmailReader(stream, false, options, "-"));
}

EmailReader::EmailReader(std::FILE* f, bool owned, EmailReaderOptions options, std::string name)
    : file_(f), owned_(owned), options_(options), name_(std::move(name)), buf_(new char[kReadBuffer]) {}

EmailReader::~EmailReader() {
  if (owned_ && file_ != nullptr) std::fclose(file_);
}

bool EmailReader::ReadLine(bool* too_long) {
  line_.clear();
  *too_long = false;
  bool any = false;
  while (true) {
    if (buf_pos_ == buf_len_) {
      if (eof_) return any;
      buf_len_ = std::fread(buf_.get(), 1, kReadBuffer, file_);
      buf_pos_ = 0;
      if (buf_len_ == 0) {
        if (std::ferror(file_)) status_ = IoError("reading " + name_ + ": " + std::strerror(errno));
        eof_ = true;
        return any;
      }
    }
    any = true;
    const char* start = buf_.get() + buf_pos_;
    const size_t avail = buf_len_ - buf_pos_;
    const void* nl = std::memchr(start, '\n', avail);
    const size_t take = nl == nullptr ? avail : static_cast<size_t>(static_cast<const char*>(nl) - start);
    stats_.bytes += take + (nl == nullptr ? 0 : 1);
    if (!*too_long) {
      if (line_.size() + take > options_.max_line_bytes) {
        *too_long = true;
        line_.clear();
      } else {
        line_.append(start, take);
      }
    }
    buf_pos_ += take + (nl == nullptr ? 0 : 1);
    if (nl != nullptr) return true;
  }
}

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
  while (status_.ok() && ReadLine(&too_long)) {
    const uint64_t line = ++stats_.lines;
    if (too_long) {
      Report(line, "line longer than " + std::to_string(options_.max_line_bytes) + " bytes");
      continue;
    }
    if (line_.find_first_not_of(" \t\r") == std::string::npos) continue;
    Status s = ParseEmailRecord(line_, record);
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
