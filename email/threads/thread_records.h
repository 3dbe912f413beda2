// The JSON Lines records of the unified threads commands and endpoints.
//
// An email of a mailbox (neardup email threads ingest):
//   {"gid": "u7", "thread": "th18f2", "message_id": "<a1@mail.example>", "team": "acme"}
//   gid and thread required (non-empty strings; gid without ':'); message_id and team optional
//   (absent, null or empty: none).
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "email/threads/thread_weaver.h"

namespace neardup::email {

// InvalidArgument naming the field and the problem, never its content.
Status ParseThreadEmail(std::string_view line, ThreadEmail* out);
std::string ThreadEmailJson(const ThreadEmail& e);

// A lookup's answer, one JSON object (no newline):
//   {"gid","thread","known":bool,"threads":[...],"unified":[...],"spam_ignored":n}
std::string UnifiedThreadJson(std::string_view gid, std::string_view thread, const UnifiedThread& u);

}  // namespace neardup::email
