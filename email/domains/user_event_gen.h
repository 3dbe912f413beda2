// The generator of a users table's changes and their at-least-once event stream (for `neardup
// email gen-domains`, the benchmark and the tests), deterministic for a seed.
//
// GenerateUserEvents: the users of teams joining, leaving, and changing email address or role;
// each change is a write of the user's row (the truth) and an event for the at-least-once queue,
// delivered once, twice (duplicate_rate), never (drop_rate) or up to reorder_window events late
// (reorder_rate). See email/domains/domain_counts.h.
//
// Thread safety: a pure function.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "common/config.h"
#include "email/domains/domain_counts.h"

namespace neardup::email {

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
