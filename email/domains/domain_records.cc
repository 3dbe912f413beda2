#include "email/domains/domain_records.h"

#include "common/json_write.h"

namespace neardup::email {

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

}  // namespace neardup::email
