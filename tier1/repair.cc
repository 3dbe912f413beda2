// Tier1's repair (tier1/tier1.h): Flush, which writes what the queries learnt and repairs the
// groups due; Repair, an explicit repair; what a repair is (all pairs of a group's content
// members compared, the group split into connected components).
#include "tier1/tier1.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

#include <spdlog/spdlog.h>

#include "tier1/tier1_internal.h"

namespace neardup::tier1 {
namespace {

struct UnionFind {
  std::vector<uint32_t> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0u); }
  uint32_t Find(uint32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void Union(uint32_t a, uint32_t b) {
    a = Find(a), b = Find(b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  }
};

}  // namespace

Status Tier1::Flush(std::vector<RepairReport>* repairs) {
  RETURN_IF_ERROR(LoadTodo());
  std::sort(repair_queue_.begin(), repair_queue_.end());
  repair_queue_.erase(std::unique(repair_queue_.begin(), repair_queue_.end()), repair_queue_.end());
  for (uint64_t gid : repair_queue_) {
    ASSIGN_OR_RETURN(const bool due, RepairDue(txn_, gid));
    if (!due) continue;
    RepairReport r;
    Status s = RepairIn(txn_, gid, &r);
    if (s.code() == StatusCode::kNotFound) continue;
    RETURN_IF_ERROR(s);
    if (repairs != nullptr) repairs->push_back(r);
  }
  repair_queue_.clear();
  RETURN_IF_ERROR(UpdateKeptSets(txn_, nullptr));
  flushed_ = true;  // what the repairs queued for Reverify waits for the next batch
  // Caches and repairs are recomputable, and the next batch's write syncs the log anyway.
  return CommitWorkingSet(/*durable=*/false);
}

StatusOr<bool> Tier1::RepairDue(GroupStore::Txn& txn, uint64_t group) {
  ASSIGN_OR_RETURN(const pb::Tier1Group* g, txn.FindGroup(group));
  if (g == nullptr || g->rejections() == 0) return false;
  const double rejections = static_cast<double>(g->rejections());
  // The threshold for c content members: min(max(repair_min_rejections, share * c), max(c - 1, 1)).
  // It never decreases with c, so once it passes the rejections for the members counted so far,
  // the rest need not be read.
  auto threshold = [&](uint64_t c) {
    const double share = std::max<double>(options_.repair_min_rejections,
                                          options_.repair_rejection_share * static_cast<double>(c));
    return std::min(share, static_cast<double>(std::max<uint64_t>(c, 2) - 1));
  };
  std::vector<std::string> members;
  RETURN_IF_ERROR(txn.Members(group, &members));
  uint64_t content = 0;
  for (const std::string& url : members) {
    ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn.FindPage(url));
    if (p == nullptr || !p->has_signature()) continue;
    if (threshold(++content) > rejections) return false;
  }
  return rejections >= threshold(content);
}

Status Tier1::Repair(uint64_t group, RepairReport* report) {
  RETURN_IF_ERROR(Flush());
  RETURN_IF_ERROR(RepairIn(txn_, group, report));
  RETURN_IF_ERROR(UpdateKeptSets(txn_, nullptr));
  return CommitWithTodo(/*durable=*/true, /*keep_cache=*/false);
}

Status Tier1::RepairIn(GroupStore::Txn& txn, uint64_t group, RepairReport* report) {
  *report = RepairReport();
  report->group = group;
  ASSIGN_OR_RETURN(const pb::Tier1Group* g, txn.FindGroup(group));
  if (g == nullptr) return NotFound("group " + std::to_string(group) + " does not exist");
  std::vector<std::string> members;
  RETURN_IF_ERROR(txn.Members(group, &members));
  report->members = members.size();
  std::vector<pb::Tier1Page> pages(members.size());
  std::unordered_map<std::string, uint32_t> index;
  std::vector<uint32_t> content;
  for (uint32_t i = 0; i < members.size(); ++i) {
    ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn.FindPage(members[i]));
    if (p != nullptr) pages[i] = *p;
    index.emplace(members[i], i);
    if (pages[i].has_signature()) content.push_back(i);
  }
  if (content.size() > options_.repair_max_members) {
    report->skipped = 1;
    txn.AddCounter("repairs_skipped", 1);
    spdlog::warn("tier1: group {} has {} content members, over repair_max_members {}: not repaired", group,
                 content.size(), options_.repair_max_members);
    return Status::Ok();
  }
  std::vector<pb::PageSignature> sigs(content.size());
  for (size_t k = 0; k < content.size(); ++k) {
    ASSIGN_OR_RETURN(sigs[k], FetchSignature(members[content[k]], pages[content[k]]));
  }
  UnionFind uf(members.size());
  double sim = 0;
  for (size_t a = 0; a < content.size(); ++a) {
    for (size_t b = a + 1; b < content.size(); ++b) {
      if (Similar(sigs[a], sigs[b], options_.threshold, &sim)) uf.Union(content[a], content[b]);
    }
  }
  // Redirecting members stay with the page their chain ends at (when it is in this group).
  for (uint32_t i = 0; i < members.size(); ++i) {
    if (pages[i].redirect_to().empty()) continue;
    auto it = index.find(pages[i].redirect_to());
    if (it != index.end()) uf.Union(i, it->second);
  }
  std::map<uint32_t, std::vector<std::string>> components;
  for (uint32_t i = 0; i < members.size(); ++i) components[uf.Find(i)].push_back(members[i]);
  std::vector<std::vector<std::string>> parts;
  for (auto& [root, urls] : components) parts.push_back(std::move(urls));
  std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  report->components = parts.size();
  Touched touched;
  for (size_t k = 1; k < parts.size(); ++k) {
    RETURN_IF_ERROR(MovePages(txn, parts[k], group, txn.NewGroupId(), &touched));
  }
  for (auto& [gid, e] : touched.groups) e.full = true;
  touched.groups[group].full = true;
  // Kept sets from scratch: the greedy in winner-rule order over each part.
  for (auto& [gid, e] : touched.groups) KeptWorkOf(gid).full = true;
  // Verification starts afresh for every page of the repaired groups.
  for (const std::string& url : members) {
    ASSIGN_OR_RETURN(pb::Tier1Page * rec, txn.MutablePage(url));
    rec->set_rejected(false);
    rec->clear_verified_winner();
  }
  for (auto& [gid, e] : touched.groups) {
    ASSIGN_OR_RETURN(pb::Tier1Group * tg, txn.MutableGroup(gid));
    tg->set_rejections(0);
  }
  ASSIGN_OR_RETURN(pb::Tier1Group * mg, txn.MutableGroup(group));
  mg->set_repairs(mg->repairs() + 1);
  RETURN_IF_ERROR(UpdateWinners(txn, &touched));
  txn.AddCounter("repairs", 1);
  txn.AddCounter("repair_splits", static_cast<int64_t>(parts.size()) - 1);
  return Status::Ok();
}

}  // namespace neardup::tier1
