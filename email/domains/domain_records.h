// The JSON answers of the domain counts commands and endpoints. The domain records read
// (user rows, events, team settings) are parsed by email/domains/domain_counts.h.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "email/domains/domain_counts.h"

namespace neardup::email {

// A classification, one JSON object (no newline):
//   {"team","invitee","class":"internal|external","reason","members","guests","team_members"}
std::string ClassificationJson(std::string_view team, std::string_view invitee, const Classification& c);
// One key's count: {"team","domain","role","count"} (no newline).
std::string DomainCountJson(const DomainKey& k, int64_t count);

}  // namespace neardup::email
