#include "email/mail_records.h"

#include <simdjson.h>
#include <spdlog/spdlog.h>

#include "common/json_write.h"
#include "common/line_reader.h"
#include "document/json_fields.h"

namespace neardup::email {

Status ParseThreadEmail(std::string_view line, ThreadEmail* out) {
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.parse(line.data(), line.size(), true).get(doc); err != simdjson::SUCCESS) {
    return InvalidArgument(std::string("not JSON: ") + simdjson::error_message(err));
  }
  simdjson::dom::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) return InvalidArgument("line is not a JSON object");
  RETURN_IF_ERROR(RequiredJsonString(obj, "gid", &out->gid));
  if (out->gid.empty()) return JsonFieldError("gid", "must not be empty");
  if (out->gid.find(':') != std::string::npos) return JsonFieldError("gid", "must not contain ':'");
  RETURN_IF_ERROR(RequiredJsonString(obj, "thread", &out->thread));
  if (out->thread.empty()) return JsonFieldError("thread", "must not be empty");
  bool present = false;
  out->message_id.clear();
  out->team.clear();
  RETURN_IF_ERROR(OptionalJsonString(obj, "message_id", &out->message_id, &present));
  RETURN_IF_ERROR(OptionalJsonString(obj, "team", &out->team, &present));
  return Status::Ok();
}

namespace {

void AppendStringArray(std::string* s, const std::vector<std::string>& v) {
  s->push_back('[');
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s->push_back(',');
    AppendJsonString(s, v[i]);
  }
  s->push_back(']');
}

}  // namespace

std::string UnifiedThreadJson(std::string_view gid, std::string_view thread, const UnifiedThread& u) {
  std::string s = "{\"gid\":";
  AppendJsonString(&s, gid);
  s += ",\"thread\":";
  AppendJsonString(&s, thread);
  s += std::string(",\"known\":") + (u.known ? "true" : "false") + ",\"threads\":";
  AppendStringArray(&s, u.threads);
  s += ",\"unified\":";
  AppendStringArray(&s, u.unified);
  s += ",\"spam_ignored\":" + std::to_string(u.spam) + "}";
  return s;
}

std::string ClassificationJson(std::string_view team, std::string_view invitee, const Classification& c) {
  std::string s = "{\"team\":";
  AppendJsonString(&s, team);
  s += ",\"invitee\":";
  AppendJsonString(&s, invitee);
  s += std::string(",\"class\":\"") + (c.internal ? "internal" : "external") + "\",\"reason\":";
  AppendJsonString(&s, c.reason);
  s += ",\"members\":" + std::to_string(c.members) + ",\"guests\":" + std::to_string(c.guests) +
       ",\"team_members\":" + std::to_string(c.team_members) + "}";
  return s;
}

std::string DomainCountJson(const DomainKey& k, int64_t count) {
  std::string s = "{\"team\":";
  AppendJsonString(&s, k.team);
  s += ",\"domain\":";
  AppendJsonString(&s, k.domain);
  s += ",\"role\":";
  AppendJsonString(&s, k.role);
  s += ",\"count\":" + std::to_string(count) + "}";
  return s;
}

std::string ThreadEmailJson(const ThreadEmail& e) {
  std::string s = "{\"gid\":";
  AppendJsonString(&s, e.gid);
  s += ",\"thread\":";
  AppendJsonString(&s, e.thread);
  if (!e.message_id.empty()) {
    s += ",\"message_id\":";
    AppendJsonString(&s, e.message_id);
  }
  if (!e.team.empty()) {
    s += ",\"team\":";
    AppendJsonString(&s, e.team);
  }
  return s + "}";
}

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
