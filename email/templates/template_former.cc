#include "email/templates/template_former.h"

#include <algorithm>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "document/shingle.h"

namespace neardup::email {
namespace {

std::vector<uint64_t> CoreOf(const std::unordered_map<uint64_t, uint32_t>& counts, size_t members) {
  std::vector<uint64_t> core;
  for (const auto& [s, n] : counts) {
    if (2 * static_cast<size_t>(n) >= members) core.push_back(s);
  }
  std::sort(core.begin(), core.end());
  return core;
}

std::vector<uint64_t> CoreOfMembers(const std::vector<std::vector<uint64_t>>& reduced, const std::vector<size_t>& members) {
  std::unordered_map<uint64_t, uint32_t> counts;
  for (size_t m : members) {
    for (uint64_t s : reduced[m]) ++counts[s];
  }
  return CoreOf(counts, members.size());
}

uint32_t Recipients(std::span<const pb::StoredEmail> emails, const std::vector<size_t>& members) {
  std::unordered_set<uint64_t> r;
  for (size_t m : members) r.insert(emails[m].recipient());
  return static_cast<uint32_t>(r.size());
}

std::vector<std::string> SubjectWords(const std::string& s) {
  std::vector<std::string> w;
  std::istringstream in(s);
  std::string x;
  while (in >> x) w.push_back(x);
  return w;
}

}  // namespace

StatusOr<FormationOptions> FormationOptionsFrom(const pb::EmailConfig& c) {
  FormationOptions o;
  ASSIGN_OR_RETURN(o.mode, ParseFingerprintMode(c.mode()));
  o.k = c.k();
  o.containment = c.containment();
  o.merge_jaccard = c.merge_jaccard();
  o.min_fixed_shingles = c.min_fixed_shingles();
  o.min_fixed_share = c.min_fixed_share();
  return o;
}

double Containment(std::span<const uint64_t> a, std::span<const uint64_t> b) {
  return b.empty() ? 0.0 : static_cast<double>(Overlap(a, b)) / static_cast<double>(b.size());
}

namespace {

// The members of each of `count` candidates, by the candidate each email is assigned to (-1: none).
std::vector<std::vector<size_t>> MembersOf(const std::vector<int>& assign, size_t count) {
  std::vector<std::vector<size_t>> members(count);
  for (size_t i = 0; i < assign.size(); ++i) {
    if (assign[i] >= 0) members[assign[i]].push_back(i);
  }
  return members;
}

// The row as one variant (paper mode), if it reaches k unique recipients.
std::vector<Variant> PaperVariant(std::span<const pb::StoredEmail> emails,
                                  const std::vector<std::vector<uint64_t>>& full, const FormationOptions& o) {
  std::vector<Variant> out;
  Variant v;
  for (size_t i = 0; i < emails.size(); ++i) v.members.push_back(i);
  v.core = CoreOfMembers(full, v.members);
  v.recipients = Recipients(emails, v.members);
  if (v.recipients >= o.k) out.push_back(std::move(v));
  return out;
}

// Step 1: the shingles that occur in the emails of at least k unique recipients (sorted).
std::vector<uint64_t> SharedShingles(std::span<const pb::StoredEmail> emails,
                                     const std::vector<std::vector<uint64_t>>& full, const FormationOptions& o) {
  std::vector<std::pair<uint64_t, uint64_t>> pairs;  // (shingle, recipient)
  for (size_t i = 0; i < full.size(); ++i) {
    for (uint64_t s : full[i]) pairs.emplace_back(s, emails[i].recipient());
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  std::vector<uint64_t> shared;
  for (size_t i = 0; i < pairs.size();) {
    size_t j = i;
    while (j < pairs.size() && pairs[j].first == pairs[i].first) ++j;
    if (j - i >= o.k) shared.push_back(pairs[i].first);
    i = j;
  }
  return shared;
}

// A candidate's running core: how many of its members hold each shingle.
struct RunningCore {
  std::unordered_map<uint64_t, uint32_t> counts;
  size_t size = 0;
};

// Step 2: leader clustering in arrival order against the running cores; returns each email's
// candidate (-1: an email with no shared shingle) and sets *count to the number of candidates.
std::vector<int> LeaderClusters(const std::vector<std::vector<uint64_t>>& reduced, const FormationOptions& o,
                                size_t* count) {
  const size_t n = reduced.size();
  std::vector<int> assign(n, -1);
  std::vector<RunningCore> running;
  for (size_t i = 0; i < n; ++i) {
    if (reduced[i].empty()) continue;
    int best = -1;
    double best_j = 0;
    for (size_t v = 0; v < running.size(); ++v) {
      const std::vector<uint64_t> core = CoreOf(running[v].counts, running[v].size);
      const size_t ov = Overlap(reduced[i], core);
      if (JaccardAtLeast(ov, reduced[i].size(), core.size(), o.merge_jaccard)) {
        const double j = Jaccard(reduced[i], core);
        if (j > best_j) best_j = j, best = static_cast<int>(v);
      }
    }
    if (best < 0) {
      best = static_cast<int>(running.size());
      running.emplace_back();
    }
    for (uint64_t s : reduced[i]) ++running[best].counts[s];
    ++running[best].size;
    assign[i] = best;
  }
  *count = running.size();
  return assign;
}

// One refinement round: the candidates' cores recomputed, largest first, a core absorbing the
// later ones within merge_jaccard; every email reassigned to the core it contains at least
// `containment` of (the best by Jaccard) or to none. Returns the cores kept; *assign indexes them.
std::vector<std::vector<uint64_t>> RefineOnce(const std::vector<std::vector<uint64_t>>& reduced, size_t count,
                                              const FormationOptions& o, std::vector<int>* assign) {
  const std::vector<std::vector<size_t>> members = MembersOf(*assign, count);
  std::vector<size_t> order;
  for (size_t v = 0; v < members.size(); ++v) {
    if (!members[v].empty()) order.push_back(v);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return members[a].size() > members[b].size(); });
  std::vector<std::vector<uint64_t>> all_cores(members.size());
  for (size_t v : order) all_cores[v] = CoreOfMembers(reduced, members[v]);
  std::vector<std::vector<uint64_t>> cores;
  std::vector<bool> absorbed(members.size(), false);
  for (size_t a = 0; a < order.size(); ++a) {
    if (absorbed[order[a]]) continue;
    for (size_t b = a + 1; b < order.size(); ++b) {
      if (!absorbed[order[b]] && Jaccard(all_cores[order[a]], all_cores[order[b]]) >= o.merge_jaccard) {
        absorbed[order[b]] = true;
      }
    }
    if (!all_cores[order[a]].empty()) cores.push_back(all_cores[order[a]]);
  }
  for (size_t i = 0; i < reduced.size(); ++i) {
    (*assign)[i] = -1;
    if (reduced[i].empty()) continue;
    double best_j = -1;
    for (size_t v = 0; v < cores.size(); ++v) {
      if (Containment(reduced[i], cores[v]) < o.containment) continue;
      const double j = Jaccard(reduced[i], cores[v]);
      if (j > best_j) best_j = j, (*assign)[i] = static_cast<int>(v);
    }
  }
  return cores;
}

// Step 4: the candidates that are templates (k-anonymous, with real fixed text), largest first.
std::vector<Variant> KeptVariants(std::span<const pb::StoredEmail> emails, const std::vector<std::vector<uint64_t>>& full,
                                  const std::vector<uint64_t>& shared, const std::vector<int>& assign, size_t count,
                                  const FormationOptions& o) {
  std::vector<Variant> out;
  std::vector<std::vector<size_t>> members = MembersOf(assign, count);
  for (size_t v = 0; v < count; ++v) {
    if (members[v].empty()) continue;
    Variant var;
    var.members = std::move(members[v]);
    var.recipients = Recipients(emails, var.members);
    if (var.recipients < o.k) continue;
    var.core = CoreOfMembers(full, var.members);
    // The core over the members' full shingles equals the reduced one plus rare text shared by half
    // of them; keep only what k recipients share.
    std::vector<uint64_t> kept;
    std::set_intersection(var.core.begin(), var.core.end(), shared.begin(), shared.end(), std::back_inserter(kept));
    var.core = std::move(kept);
    if (var.core.size() < o.min_fixed_shingles) continue;
    double share = 0;
    for (size_t m : var.members) {
      share += full[m].empty() ? 0.0 : static_cast<double>(var.core.size()) / static_cast<double>(full[m].size());
    }
    if (share / static_cast<double>(var.members.size()) < o.min_fixed_share) continue;
    out.push_back(std::move(var));
  }
  std::stable_sort(out.begin(), out.end(), [](const Variant& a, const Variant& b) { return a.members.size() > b.members.size(); });
  return out;
}

}  // namespace

std::vector<Variant> SplitRow(std::span<const pb::StoredEmail> emails, const FormationOptions& o) {
  if (emails.empty()) return {};
  const size_t n = emails.size();
  std::vector<std::vector<uint64_t>> full(n);
  for (size_t i = 0; i < n; ++i) full[i].assign(emails[i].shingles().begin(), emails[i].shingles().end());
  if (o.mode == FingerprintMode::kPaper) return PaperVariant(emails, full, o);

  // 1. Each email reduced to the shingles shared by k unique recipients.
  const std::vector<uint64_t> shared = SharedShingles(emails, full, o);
  std::vector<std::vector<uint64_t>> reduced(n);
  for (size_t i = 0; i < n; ++i) {
    std::set_intersection(full[i].begin(), full[i].end(), shared.begin(), shared.end(), std::back_inserter(reduced[i]));
  }
  // 2. Leader clustering against running cores.
  size_t count = 0;
  std::vector<int> assign = LeaderClusters(reduced, o, &count);
  // 3. Refinement, three rounds.
  for (int round = 0; round < 3; ++round) count = RefineOnce(reduced, count, o, &assign).size();
  // 4. Templates: k-anonymous, with real fixed text.
  return KeptVariants(emails, full, shared, assign, count, o);
}

const pb::EmailTemplate* MatchTemplate(std::span<const pb::EmailTemplate* const> candidates,
                                       std::span<const uint64_t> shingles, const FormationOptions& o) {
  const pb::EmailTemplate* best = nullptr;
  double best_j = -1;
  for (const pb::EmailTemplate* t : candidates) {
    if (o.mode == FingerprintMode::kPaper) {
      if (best == nullptr || t->emails() > best->emails() || (t->emails() == best->emails() && t->id() < best->id())) best = t;
      continue;
    }
    const std::span<const uint64_t> core(t->core().data(), static_cast<size_t>(t->core().size()));
    if (Containment(shingles, core) < o.containment) continue;
    const double j = Jaccard(shingles, core);
    if (j > best_j || (j == best_j && best != nullptr && t->id() < best->id())) best_j = j, best = t;
  }
  return best;
}

std::string SubjectPattern(std::span<const pb::StoredEmail* const> members) {
  if (members.empty()) return "";
  std::unordered_map<std::string, size_t> in;  // word -> members whose subject has it
  for (const pb::StoredEmail* e : members) {
    std::vector<std::string> w = SubjectWords(e->subject());
    std::sort(w.begin(), w.end());
    w.erase(std::unique(w.begin(), w.end()), w.end());
    for (auto& x : w) ++in[x];
  }
  std::string out;
  bool star = false;
  for (const std::string& w : SubjectWords(members.front()->subject())) {
    if (in[w] == members.size()) {
      if (star) out += out.empty() ? "*" : " *";
      star = false;
      out += (out.empty() ? "" : " ") + w;
    } else {
      star = true;
    }
  }
  if (star) out += out.empty() ? "*" : " *";
  return out;
}

pb::EmailTemplate BuildTemplate(uint64_t row, uint64_t id, std::span<const pb::StoredEmail> emails, const Variant& v,
                                const std::vector<std::unique_ptr<Udca>>& udcas, int64_t now_ms) {
  std::vector<const pb::StoredEmail*> members;
  int64_t first = 0;
  for (size_t m : v.members) {
    members.push_back(&emails[m]);
    const int64_t t = emails[m].sent_at_ms();
    if (t != 0 && (first == 0 || t < first)) first = t;
  }
  // Members in time order (ties by id), so that aggregators see the same order on every replay.
  std::stable_sort(members.begin(), members.end(), [](const pb::StoredEmail* a, const pb::StoredEmail* b) {
    return a->sent_at_ms() != b->sent_at_ms() ? a->sent_at_ms() < b->sent_at_ms() : a->id() < b->id();
  });
  pb::EmailTemplate t;
  t.set_id(id);
  t.set_row(row);
  t.set_created_ms(now_ms);
  t.set_emails(static_cast<uint32_t>(v.members.size()));
  t.set_recipients(v.recipients);
  t.set_first_email_ms(first);
  t.set_sender(emails[v.members.front()].sender());
  t.set_subject_pattern(SubjectPattern(members));
  t.mutable_core()->Assign(v.core.begin(), v.core.end());
  for (const auto& u : udcas) {
    std::string json = u->Aggregate(members);
    if (json.empty()) continue;
    auto* a = t.add_annotations();
    a->set_udca(std::string(u->name()));
    a->set_json(std::move(json));
  }
  return t;
}

}  // namespace neardup::email
