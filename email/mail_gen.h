// Generators of realistic mailbox traffic (for `neardup email gen-threads | gen-domains`, the
// benchmark and the tests), deterministic for a seed.
//
// GenerateMailboxes: conversations among the users (gids) of teams; every copy of a message lands
// in each participant's own mailbox thread (sent mail in the sender's). Replies go to everyone in
// the conversation, forwards bring in a new participant (often of another team) in a thread of
// their own, and a mailbox thread that reaches 100 messages continues in a new one (as Gmail
// does). A system reuses one Message-ID for every email it sends (each in a new thread of its
// recipient), and some mail has no Message-ID at all. Emails come interleaved across conversations.
//
// GenerateUserEvents: the users of teams joining, leaving, and changing email address or role;
// each change is a write of the user's row (the truth) and an event for the at-least-once queue,
// delivered once, twice (duplicate_rate), never (drop_rate) or up to reorder_window events late
// (reorder_rate). See email/domain_counts.h.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "email/domain_counts.h"
#include "email/thread_weaver.h"

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

struct UserEventGenOptions {
  uint64_t seed = 1;
  uint64_t changes = 100'000;      // user changes (joins, leaves, email and role changes)
  uint32_t teams = 100;
  uint32_t domains_per_team = 4;   // a team's own domains, besides shared and public ones
  double duplicate_rate = ConfigDefaults().email().domain_duplicate_rate();
  double drop_rate = ConfigDefaults().email().domain_drop_rate();
  double reorder_rate = ConfigDefaults().email().domain_reorder_rate();
  uint32_t reorder_window = ConfigDefaults().email().domain_reorder_window();
};

struct UserEventStream {
  std::vector<DomainRecord> records;  // user rows and event deliveries, in arrival order
  std::vector<TeamSettings> teams;    // each team's tenant domains
  // The exact count of every (team, domain, role) with users, after all changes.
  std::vector<std::pair<DomainKey, int64_t>> truth;
  uint64_t events = 0, duplicated = 0, dropped = 0, reordered = 0;
};

UserEventStream GenerateUserEvents(const UserEventGenOptions& options);

}  // namespace neardup::email
