#include "email/templates/evaluation.h"

#include <simdjson.h>

#include <set>
#include <unordered_map>

#include "document/json_lines.h"

namespace neardup::email {

StatusOr<Scores> Score(const std::vector<std::optional<uint64_t>>& assignments, const std::vector<std::string>& labels) {
  if (assignments.size() != labels.size()) {
    return InvalidArgument("scoring: " + std::to_string(assignments.size()) + " assignments for " +
                           std::to_string(labels.size()) + " labels");
  }
  Scores s;
  s.emails = labels.size();
  std::unordered_map<uint64_t, std::map<std::string, uint64_t>> by_template;
  std::map<std::string, std::set<uint64_t>> by_label;
  uint64_t templated = 0, templated_assigned = 0;
  std::set<std::string> label_set;
  for (size_t i = 0; i < labels.size(); ++i) {
    const bool personal = labels[i] == "none";
    if (!personal) ++templated, label_set.insert(labels[i]);
    if (!assignments[i]) continue;
    ++s.assigned;
    if (personal) ++s.personal_clustered;
    else ++templated_assigned;
    ++by_template[*assignments[i]][labels[i]];
    if (!personal) by_label[labels[i]].insert(*assignments[i]);
  }
  uint64_t majority = 0;
  for (const auto& [t, counts] : by_template) {
    uint64_t best = 0;
    for (const auto& [l, n] : counts) best = std::max(best, n);
    majority += best;
  }
  s.templates = by_template.size();
  s.labels = label_set.size();
  s.purity = s.assigned == 0 ? 1.0 : static_cast<double>(majority) / static_cast<double>(s.assigned);
  s.coverage = templated == 0 ? 1.0 : static_cast<double>(templated_assigned) / static_cast<double>(templated);
  uint64_t frag = 0;
  for (const auto& [l, ts] : by_label) frag += ts.size();
  s.fragmentation = by_label.empty() ? 0.0 : static_cast<double>(frag) / static_cast<double>(by_label.size());
  return s;
}

StatusOr<std::map<std::string, std::string>> ReadLabels(const std::string& path) {
  std::map<std::string, std::string> out;
  // Lines that are not JSON are reported and skipped; lines without a label, skipped.
  const Status read = ForEachJsonLine(path, {}, [&](std::string_view line, uint64_t) -> Status {
    simdjson::dom::object doc;
    RETURN_IF_ERROR(ParseJsonLine(line, {.padded = true}, &doc));
    std::string_view id, label;
    if (doc["id"].get_string().get(id) == simdjson::SUCCESS && doc["label"].get_string().get(label) == simdjson::SUCCESS) {
      out.emplace(std::string(id), std::string(label));
    }
    return Status::Ok();
  }).status();
  RETURN_IF_ERROR(read);
  return out;
}

}  // namespace neardup::email
