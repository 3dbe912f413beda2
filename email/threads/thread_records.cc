#include "email/threads/thread_records.h"

#include <simdjson.h>

#include "common/json_write.h"
#include "document/json_fields.h"
#include "document/json_lines.h"

namespace neardup::email {

Status ParseThreadEmail(std::string_view line, ThreadEmail* out) {
  simdjson::dom::object obj;
  RETURN_IF_ERROR(ParseJsonLine(line, {}, &obj));
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

}  // namespace neardup::email
