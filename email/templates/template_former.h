// Template formation: a cluster row's emails -> templates (the Crusher paper's FormTemplate).
//
// `paper` mode: the row is one cluster, as in the paper.
// `verified` mode: a row (one sender, one structure) may hold several templates that share a
// layout and differ in their text. SplitRow finds them from the text alone:
//  1. A shingle counts only when it occurs in the emails of at least k unique recipients of the
//     row: a template's fixed text does (a template needs k recipients), a recipient's own fields
//     do not. Each email is reduced to those shingles.
//  2. Leader clustering in arrival order against each candidate's running core (the shingles in
//     at least half of its members), with Jaccard >= merge_jaccard.
//  3. Refinement, three rounds: cores are recomputed, candidates whose cores have Jaccard >=
//     merge_jaccard merge (the larger absorbs), and every email goes to the core it contains at
//     least `containment` of, the best by Jaccard, or to none.
//  4. A candidate becomes a template when its emails reach k unique recipients and its core is
//     real fixed text: at least min_fixed_shingles shingles and, on average, min_fixed_share of its
//     members' shingles (mail that shares only a signature line is not a template).
// MatchTemplate is the same test for one email against formed templates (annotation).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "email/templates/email_features.h"
#include "email/templates/udca.h"
#include "proto/email.pb.h"

namespace neardup::email {

struct FormationOptions {
  FingerprintMode mode = FingerprintMode::kVerified;
  uint32_t k = 10;
  double containment = 0.6;
  double merge_jaccard = 0.4;
  uint32_t min_fixed_shingles = 8;
  double min_fixed_share = 0.2;
};

// Options from the configuration's email section.
StatusOr<FormationOptions> FormationOptionsFrom(const pb::EmailConfig& c);

struct Variant {
  std::vector<size_t> members;   // indices into the row's emails, ascending
  std::vector<uint64_t> core;    // sorted: shingles in at least half of the members
  uint32_t recipients = 0;       // unique recipients of the members
};

// The row's templates-to-be: only those that pass k-anonymity and the fixed-text rules, largest
// first.
std::vector<Variant> SplitRow(std::span<const pb::StoredEmail> emails, const FormationOptions& o);

// |a ∩ b| / |b| for sorted unique arrays (0 for an empty b).
double Containment(std::span<const uint64_t> a, std::span<const uint64_t> b);

// The template an email with these shingles belongs to among `candidates` (one row's or a few
// rows' templates), or null. verified: the best Jaccard among the templates whose core the
// shingles contain at least o.containment of. paper: the template with the most emails (ties: the
// smaller id), without a text check.
const pb::EmailTemplate* MatchTemplate(std::span<const pb::EmailTemplate* const> candidates,
                                       std::span<const uint64_t> shingles, const FormationOptions& o);

// The members' common subject words, "*" for a run of words not common to all ("New comment on
// *").
std::string SubjectPattern(std::span<const pb::StoredEmail* const> members);

// A template from a variant of a row: counts, core, subject pattern and each aggregator's
// annotation. `id` and `now_ms` as given.
pb::EmailTemplate BuildTemplate(uint64_t row, uint64_t id, std::span<const pb::StoredEmail> emails,
                                const Variant& v, const std::vector<std::unique_ptr<Udca>>& udcas, int64_t now_ms);

}  // namespace neardup::email
