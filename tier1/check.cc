// CheckStore: the group store's invariants, checked by a full scan (tier1/tier1.h).
#include <unordered_map>

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

}  // namespace

Status CheckStore(const GroupStore& store, CheckReport* report) {
  *report = CheckReport();
  Checker c{report};
  const RowStore& rows = store.rows();
  std::unordered_map<std::string, uint64_t> page_group;
  std::unordered_map<std::string, std::string> redirect_of;
  Status parse;
  RETURN_IF_ERROR(rows.ScanFamily(store.page_family(), [&](std::string_view url, std::string_view, std::string_view v) {
    pb::Tier1Page p;
    if (!p.ParseFromArray(v.data(), static_cast<int>(v.size()))) {
      c.Violation("page " + std::string(url) + ": unreadable record");
      return true;
    }
    ++report->pages;
    page_group.emplace(url, p.group());
    if (p.group() == 0) c.Violation("page " + std::string(url) + " is in no group");
    if (!p.redirect_to().empty()) redirect_of.emplace(url, p.redirect_to());
    return true;
  }));
  // Member cells: each names a page that names the group back, once.
  std::unordered_map<uint64_t, uint64_t> member_count;
  std::unordered_map<std::string, uint32_t> memberships;
  RETURN_IF_ERROR(rows.ScanFamily(store.member_family(), [&](std::string_view row, std::string_view url, std::string_view) {
    const uint64_t g = GroupStore::GroupFromKey(row);
    ++report->members;
    ++member_count[g];
    ++memberships[std::string(url)];
    auto it = page_group.find(std::string(url));
    if (it == page_group.end()) {
      c.Violation("group " + std::to_string(g) + " lists " + std::string(url) + ", which has no page record");
    } else if (it->second != g) {
      c.Violation("group " + std::to_string(g) + " lists " + std::string(url) + ", whose record names group " +
                  std::to_string(it->second));
    }
    return true;
  }));
  for (const auto& [url, g] : page_group) {
    auto it = memberships.find(url);
    const uint32_t n = it == memberships.end() ? 0 : it->second;
    if (n != 1) c.Violation("page " + url + " is listed in " + std::to_string(n) + " groups (must be exactly 1)");
  }
  RETURN_IF_ERROR(rows.ScanFamily(store.group_family(), [&](std::string_view row, std::string_view, std::string_view v) {
    const uint64_t g = GroupStore::GroupFromKey(row);
    pb::Tier1Group rec;
    if (!rec.ParseFromArray(v.data(), static_cast<int>(v.size()))) {
      c.Violation("group " + std::to_string(g) + ": unreadable record");
      return true;
    }
    ++report->groups;
    const uint64_t listed = member_count.count(g) > 0 ? member_count[g] : 0;
    if (listed >= 2) ++report->multi_groups;
    if (rec.members() != listed) {
      c.Violation("group " + std::to_string(g) + " counts " + std::to_string(rec.members()) + " members but lists " +
                  std::to_string(listed));
    }
    if (listed == 0) c.Violation("group " + std::to_string(g) + " has no members");
    auto is_member = [&](const std::string& url) {
      auto it = page_group.find(url);
      return it != page_group.end() && it->second == g;
    };
    if (!is_member(rec.winner())) c.Violation("group " + std::to_string(g) + ": winner " + rec.winner() + " is not a member");
    for (const auto& mw : rec.market_winners()) {
      if (!is_member(MarketWinnerUrl(rec, mw))) {
        c.Violation("group " + std::to_string(g) + ": " + mw.market() + " winner " + mw.url() + " is not a member");
      }
    }
    return true;
  }));
  for (const auto& [g, n] : member_count) {
    std::string ignored;
    if (rows.Get(store.group_family(), GroupStore::GroupKey(g), "", &ignored).code() == StatusCode::kNotFound) {
      c.Violation("group " + std::to_string(g) + " has " + std::to_string(n) + " member cells but no record");
    }
  }
  // The redirect index mirrors the pages' targets.
  uint64_t index_cells = 0;
  RETURN_IF_ERROR(rows.ScanFamily(store.redirect_family(), [&](std::string_view target, std::string_view source, std::string_view) {
    ++index_cells;
    auto it = redirect_of.find(std::string(source));
    if (it == redirect_of.end() || it->second != target) {
      c.Violation("redirect index: " + std::string(source) + " -> " + std::string(target) + " but the page says otherwise");
    }
    return true;
  }));
  report->redirects = redirect_of.size();
  if (index_cells != redirect_of.size()) {
    c.Violation("redirect index has " + std::to_string(index_cells) + " entries for " +
                std::to_string(redirect_of.size()) + " redirecting pages");
  }
  // A redirecting page shares its target's group (Tier 1 moves redirectors with their targets).
  for (const auto& [url, target] : redirect_of) {
    auto it = page_group.find(target);
    if (it == page_group.end()) {
      c.Violation("page " + url + " redirects to " + target + ", which has no record");
    } else if (const uint64_t g = page_group.at(url); it->second != g) {
      c.Violation("page " + url + " (group " + std::to_string(g) + ") redirects to " + target + ", which is in group " +
                  std::to_string(it->second));
    }
  }
  // Chains end or close a cycle: count the cycles of the functional graph (each walked once).
  std::unordered_map<std::string, uint32_t> walk_of;
  uint32_t walk = 0;
  for (const auto& [start, unused] : redirect_of) {
    if (walk_of.count(start) > 0) continue;
    ++walk;
    std::string cur = start;
    while (true) {
      auto seen = walk_of.find(cur);
      if (seen != walk_of.end()) {
        if (seen->second == walk) ++report->redirect_cycles;
        break;
      }
      walk_of.emplace(cur, walk);
      auto next = redirect_of.find(cur);
      if (next == redirect_of.end()) break;
      cur = next->second;
    }
  }
  return parse;
}

}  // namespace neardup::tier1
