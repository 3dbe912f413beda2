// Scoring template assignments against labels (the template of origin; "none" for personal
// mail), as the module's quality figures are reported:
//   purity         of the emails assigned a template, the share whose label is their template's
//                  majority label (personal mail counts as a label of its own)
//   coverage       the share of templated (label != "none") emails assigned a template
//   fragmentation  distinct templates per true label, over the labels that got any
//   personal       personal emails assigned a template (must be 0)
//
// The labels are read from the input's "label" field by ReadLabels, for scoring only; the module
// itself never reads them.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace neardup::email {

struct Scores {
  double purity = 0;
  double coverage = 0;
  double fragmentation = 0;
  uint64_t personal_clustered = 0;
  uint64_t emails = 0;
  uint64_t assigned = 0;
  uint64_t templates = 0;  // distinct template ids assigned
  uint64_t labels = 0;     // distinct true template labels (not "none")
};

// assignments[i] is email i's template or nullopt; labels[i] its label. Sizes must match
// (InvalidArgument otherwise).
StatusOr<Scores> Score(const std::vector<std::optional<uint64_t>>& assignments, const std::vector<std::string>& labels);

// id -> label of every line of a JSONL file that has both (lines without are skipped; lines that
// are not JSON are reported and skipped). IoError when the file cannot be read.
StatusOr<std::map<std::string, std::string>> ReadLabels(const std::string& path);

}  // namespace neardup::email
