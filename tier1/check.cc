// CheckStore: the group store's invariants, checked by a full scan (tier1/tier1.h).
#include <algorithm>
#include <map>
#include <span>
#include <unordered_map>
#include <vector>

#include "document/shingle.h"

#include "tier1/tier1.h"

namespace neardup::tier1 {
namespace {

constexpr size_t kMaxListed = 100;

struct Checker {
  CheckReport* report;
  void Violation(std::string what) {
    ++report->violation_count;
    if (report->violations.size() < kMaxListed) report->violations.push_back(std::move(what));
  }
};

// What the kept-set checks need of a content page.
struct KeptInfo {
  uint64_t group = 0;
  uint32_t home_cell = 0;
  bool kept = false;
  std::string duplicate_of;
  double similarity = 0;
};

// The kept sets (tier1/kept.cc): in each group that has one, every content member kept or dropped
// to a kept member of the group with similarity >= threshold, the winner kept, the kept list its
// kept members, and (with signatures) no two kept pages near-duplicates.
void CheckKeptSets(const std::unordered_map<std::string, KeptInfo>& content,
                   const std::unordered_map<uint64_t, pb::Tier1Group>& groups, SignatureSource* source,
                   double threshold, Checker* c);

// What CheckStore learns from one scan of each record family, and the checks made from it.
class StoreCheck {
 public:
  StoreCheck(const GroupStore& store, CheckReport* report) : store_(store), rows_(store.rows()), report_(report), c_{report} {}

  // Page records: each in a group; the content pages and the redirects noted.
  Status ScanPages();
  // Member cells: each names a page that names the group back, once; every page listed once.
  Status ScanMembers();
  // Group records: member counts as listed, winners members; the groups with a kept set noted.
  Status ScanGroups();
  // The kept sets (CheckKeptSets), with `signatures` and `threshold` as CheckStore's.
  void CheckKept(SignatureSource* signatures, double threshold) {
    CheckKeptSets(content_, kept_groups_, signatures, threshold, &c_);
  }
  // Every group with member cells has a record.
  void CheckGroupRecordsExist();
  // The redirect index mirrors the pages' targets.
  Status ScanRedirectIndex();
  // A redirecting page shares its target's group (Tier 1 moves redirectors with their targets).
  void CheckRedirectTargets();
  // Chains end or close a cycle: counts the cycles of the functional graph (each walked once).
  void CountRedirectCycles();

 private:
  const GroupStore& store_;
  const RowStore& rows_;
  CheckReport* report_;
  Checker c_;
  std::unordered_map<std::string, KeptInfo> content_;  // content pages (crawled, no redirect, a signature)
  std::unordered_map<uint64_t, pb::Tier1Group> kept_groups_;  // groups with a kept set
  std::unordered_map<std::string, uint64_t> page_group_;
  std::unordered_map<std::string, std::string> redirect_of_;
  std::unordered_map<uint64_t, uint64_t> member_count_;
};

Status StoreCheck::ScanPages() {
  return rows_.ScanFamily(store_.page_family(), [&](std::string_view url, std::string_view, std::string_view v) {
    pb::Tier1Page p;
    if (!p.ParseFromArray(v.data(), static_cast<int>(v.size()))) {
      c_.Violation("page " + std::string(url) + ": unreadable record");
      return true;
    }
    ++report_->pages;
    page_group_.emplace(url, p.group());
    if (p.group() == 0) c_.Violation("page " + std::string(url) + " is in no group");
    if (!p.redirect_to().empty()) redirect_of_.emplace(url, p.redirect_to());
    if (p.crawled() && p.redirect_to().empty() && p.has_signature()) {
      content_.emplace(url, KeptInfo{p.group(), p.home_cell(), p.kept(), p.duplicate_of(), p.similarity_to_kept()});
    }
    return true;
  });
}

Status StoreCheck::ScanMembers() {
  std::unordered_map<std::string, uint32_t> memberships;
  RETURN_IF_ERROR(rows_.ScanFamily(store_.member_family(), [&](std::string_view row, std::string_view url, std::string_view) {
    const uint64_t g = GroupStore::GroupFromKey(row);
    ++report_->members;
    ++member_count_[g];
    ++memberships[std::string(url)];
    auto it = page_group_.find(std::string(url));
    if (it == page_group_.end()) {
      c_.Violation("group " + std::to_string(g) + " lists " + std::string(url) + ", which has no page record");
    } else if (it->second != g) {
      c_.Violation("group " + std::to_string(g) + " lists " + std::string(url) + ", whose record names group " +
                   std::to_string(it->second));
    }
    return true;
  }));
  for (const auto& [url, g] : page_group_) {
    auto it = memberships.find(url);
    const uint32_t n = it == memberships.end() ? 0 : it->second;
    if (n != 1) c_.Violation("page " + url + " is listed in " + std::to_string(n) + " groups (must be exactly 1)");
  }
  return Status::Ok();
}

Status StoreCheck::ScanGroups() {
  return rows_.ScanFamily(store_.group_family(), [&](std::string_view row, std::string_view, std::string_view v) {
    const uint64_t g = GroupStore::GroupFromKey(row);
    pb::Tier1Group rec;
    if (!GroupStore::DecodeGroup(v, &rec)) {
      c_.Violation("group " + std::to_string(g) + ": unreadable record");
      return true;
    }
    ++report_->groups;
    const uint64_t listed = member_count_.count(g) > 0 ? member_count_[g] : 0;
    if (listed >= 2) ++report_->multi_groups;
    if (rec.members() != listed) {
      c_.Violation("group " + std::to_string(g) + " counts " + std::to_string(rec.members()) + " members but lists " +
                   std::to_string(listed));
    }
    if (listed == 0) c_.Violation("group " + std::to_string(g) + " has no members");
    auto is_member = [&](const std::string& url) {
      auto it = page_group_.find(url);
      return it != page_group_.end() && it->second == g;
    };
    if (!is_member(rec.winner())) c_.Violation("group " + std::to_string(g) + ": winner " + rec.winner() + " is not a member");
    for (const auto& mw : rec.market_winners()) {
      if (!is_member(MarketWinnerUrl(rec, mw))) {
        c_.Violation("group " + std::to_string(g) + ": " + mw.market() + " winner " + mw.url() + " is not a member");
      }
    }
    if (rec.kept_set()) kept_groups_.emplace(g, std::move(rec));
    return true;
  });
}

void StoreCheck::CheckGroupRecordsExist() {
  for (const auto& [g, n] : member_count_) {
    std::string ignored;
    if (rows_.Get(store_.group_family(), GroupStore::GroupKey(g), "", &ignored).code() == StatusCode::kNotFound) {
      c_.Violation("group " + std::to_string(g) + " has " + std::to_string(n) + " member cells but no record");
    }
  }
}

Status StoreCheck::ScanRedirectIndex() {
  uint64_t index_cells = 0;
  RETURN_IF_ERROR(rows_.ScanFamily(store_.redirect_family(), [&](std::string_view target, std::string_view source, std::string_view) {
    ++index_cells;
    auto it = redirect_of_.find(std::string(source));
    if (it == redirect_of_.end() || it->second != target) {
      c_.Violation("redirect index: " + std::string(source) + " -> " + std::string(target) + " but the page says otherwise");
    }
    return true;
  }));
  report_->redirects = redirect_of_.size();
  if (index_cells != redirect_of_.size()) {
    c_.Violation("redirect index has " + std::to_string(index_cells) + " entries for " +
                 std::to_string(redirect_of_.size()) + " redirecting pages");
  }
  return Status::Ok();
}

void StoreCheck::CheckRedirectTargets() {
  for (const auto& [url, target] : redirect_of_) {
    auto it = page_group_.find(target);
    if (it == page_group_.end()) {
      c_.Violation("page " + url + " redirects to " + target + ", which has no record");
    } else if (const uint64_t g = page_group_.at(url); it->second != g) {
      c_.Violation("page " + url + " (group " + std::to_string(g) + ") redirects to " + target + ", which is in group " +
                   std::to_string(it->second));
    }
  }
}

void StoreCheck::CountRedirectCycles() {
  std::unordered_map<std::string, uint32_t> walk_of;
  uint32_t walk = 0;
  for (const auto& [start, unused] : redirect_of_) {
    if (walk_of.count(start) > 0) continue;
    ++walk;
    std::string cur = start;
    while (true) {
      auto seen = walk_of.find(cur);
      if (seen != walk_of.end()) {
        if (seen->second == walk) ++report_->redirect_cycles;
        break;
      }
      walk_of.emplace(cur, walk);
      auto next = redirect_of_.find(cur);
      if (next == redirect_of_.end()) break;
      cur = next->second;
    }
  }
}

}  // namespace

Status CheckStore(const GroupStore& store, CheckReport* report, SignatureSource* signatures, double threshold) {
  *report = CheckReport();
  StoreCheck check(store, report);
  RETURN_IF_ERROR(check.ScanPages());
  RETURN_IF_ERROR(check.ScanMembers());
  RETURN_IF_ERROR(check.ScanGroups());
  check.CheckKept(signatures, threshold);
  check.CheckGroupRecordsExist();
  RETURN_IF_ERROR(check.ScanRedirectIndex());
  check.CheckRedirectTargets();
  check.CountRedirectCycles();
  return Status::Ok();
}

namespace {

void CheckKeptSets(const std::unordered_map<std::string, KeptInfo>& content,
                   const std::unordered_map<uint64_t, pb::Tier1Group>& groups, SignatureSource* source,
                   double threshold, Checker* c) {
  CheckReport* report = c->report;
  report->kept_sets = groups.size();
  std::map<uint64_t, std::vector<std::string>> kept_of;  // group -> its kept members
  auto fetch = [&](const std::string& url, const KeptInfo& k, pb::PageSignature* out) {
    StatusOr<pb::PageSignature> s = source->Fetch(url, k.home_cell);
    if (!s.ok()) {
      c->Violation("page " + url + ": its signature cannot be read (" + s.status().message() + ")");
      return false;
    }
    *out = std::move(*s);
    return true;
  };
  auto jaccard = [](const pb::PageSignature& a, const pb::PageSignature& b) {
    return Jaccard(std::span<const uint64_t>(a.shingles().data(), static_cast<size_t>(a.shingles_size())),
                   std::span<const uint64_t>(b.shingles().data(), static_cast<size_t>(b.shingles_size())));
  };
  for (const auto& [url, k] : content) {
    auto g = groups.find(k.group);
    if (g == groups.end()) continue;
    const std::string where = "group " + std::to_string(k.group) + ": page " + url;
    if (k.kept) {
      ++report->kept;
      kept_of[k.group].push_back(url);
      if (!k.duplicate_of.empty()) c->Violation(where + " is kept and names duplicate_of " + k.duplicate_of);
      continue;
    }
    if (k.duplicate_of.empty()) {
      c->Violation(where + " is neither kept nor dropped");
      continue;
    }
    ++report->dropped;
    auto target = content.find(k.duplicate_of);
    if (target == content.end() || target->second.group != k.group || !target->second.kept) {
      c->Violation(where + " is a duplicate of " + k.duplicate_of + ", which is not a kept member of the group");
      continue;
    }
    if (threshold > 0 && k.similarity < threshold - 1e-9) {
      c->Violation(where + " is a duplicate of " + k.duplicate_of + " at similarity " + std::to_string(k.similarity) +
                   ", below the threshold");
    }
    if (source != nullptr && threshold > 0) {
      pb::PageSignature a, b;
      if (!fetch(url, k, &a) || !fetch(k.duplicate_of, target->second, &b)) continue;
      const double sim = jaccard(a, b);
      if (sim < threshold - 1e-9) {
        c->Violation(where + " is a duplicate of " + k.duplicate_of + " but their signatures' similarity is " +
                     std::to_string(sim));
      }
    }
  }
  for (const auto& [gid, g] : groups) {
    std::vector<std::string>& kept = kept_of[gid];
    std::sort(kept.begin(), kept.end());
    std::vector<std::string> listed(g.kept().begin(), g.kept().end());
    std::sort(listed.begin(), listed.end());
    if (kept != listed) {
      c->Violation("group " + std::to_string(gid) + " lists " + std::to_string(listed.size()) + " kept pages but " +
                   std::to_string(kept.size()) + " of its members are kept");
    }
    if (content.count(g.winner()) > 0 && !std::binary_search(kept.begin(), kept.end(), g.winner())) {
      c->Violation("group " + std::to_string(gid) + ": winner " + g.winner() + " is not kept");
    }
    if (source == nullptr || threshold <= 0 || kept.size() < 2) continue;
    std::vector<pb::PageSignature> sigs(kept.size());
    bool ok = true;
    for (size_t i = 0; i < kept.size(); ++i) ok = fetch(kept[i], content.at(kept[i]), &sigs[i]) && ok;
    if (!ok) continue;
    for (size_t i = 0; i < kept.size(); ++i) {
      for (size_t j = i + 1; j < kept.size(); ++j) {
        const double sim = jaccard(sigs[i], sigs[j]);
        if (sim >= threshold - 1e-9) {
          c->Violation("group " + std::to_string(gid) + " keeps both " + kept[i] + " and " + kept[j] +
                       ", near-duplicates at " + std::to_string(sim));
        }
      }
    }
  }
}

}  // namespace

}  // namespace neardup::tier1
