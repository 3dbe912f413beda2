// The generator of realistic mailbox traffic (for `neardup email gen-threads`, the benchmark and
// the tests), deterministic for a seed.
//
// GenerateMailboxes: conversations among the users (gids) of teams; every copy of a message lands
// in each participant's own mailbox thread (sent mail in the sender's). Replies go to everyone in
// the conversation, forwards bring in a new participant (often of another team) in a thread of
// their own, and a mailbox thread that reaches 100 messages continues in a new one (as Gmail
// does). A system reuses one Message-ID for every email it sends (each in a new thread of its
// recipient), and some mail has no Message-ID at all. Emails come interleaved across conversations.
//
// Thread safety: a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "email/threads/thread_weaver.h"

namespace neardup::email {

struct MailGenOptions {
  uint64_t seed = 1;
  uint64_t emails = 100'000;          // about this many (the last conversation ends whole)
  uint32_t teams = 50;
  uint32_t users_per_team = 20;
  double reply_share = 0.6;           // after each message, another comes with this probability
  double forward_share = 0.08;        // ...of which this share are forwards to a new participant
  double cross_team_share = 0.25;     // a recipient from another team
  double reused_message_id_share = 0.01;  // emails of the system that reuses one Message-ID
  double missing_message_id_share = 0.005;
  uint32_t thread_split = 100;        // messages after which a mailbox thread continues in a new one
};

std::vector<ThreadEmail> GenerateMailboxes(const MailGenOptions& options);

}  // namespace neardup::email
