// Tier1's construction and what its parts share: the classifications' and statuses' names, the options
// from the configuration, where a signature is read from, how the working set is committed.
// The parts: Classify (classify.cc), Apply (apply.cc), the status queries (query.cc), Flush and
// repair (repair.cc), CheckStore (check.cc).
#include "tier1/tier1.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace neardup::tier1 {

const char* ClassificationName(Classification c) {
  switch (c) {
    case Classification::kUnchanged: return "unchanged";
    case Classification::kFastPath: return "fast_path";
    case Classification::kTier2: return "tier2";
    case Classification::kEmpty: return "empty";
    case Classification::kRedirect: return "redirect";
    case Classification::kSuperseded: return "superseded";
    case Classification::kGone: return "gone";
  }
  return "?";
}

const char* StatusName(StatusAnswer::Kind k) {
  switch (k) {
    case StatusAnswer::kUnknown: return "unknown";
    case StatusAnswer::kPending: return "pending";
    case StatusAnswer::kUnique: return "unique";
    case StatusAnswer::kWinner: return "winner";
    case StatusAnswer::kDuplicate: return "duplicate";
  }
  return "?";
}

Tier1Options Tier1OptionsFromConfig(const pb::Tier1Config& config, double threshold) {
  Tier1Options o;
  o.threshold = threshold;
  o.rules = WinnerRulesFromConfig(config);
  o.fast_path = config.fast_path();
  o.repair_rejection_share = config.repair_rejection_share();
  o.repair_min_rejections = config.repair_min_rejections();
  o.repair_max_members = config.repair_max_members();
  o.reverify_max_members = config.reverify_max_members();
  o.kept_max_members = config.kept_max_members();
  o.cache_records = config.cache_records();
  o.packed_cache_bytes = uint64_t{config.packed_cache_mib()} << 20;
  return o;
}

Tier1::Tier1(GroupStore* store, SignatureSource* source, Tier1Options options)
    : store_(store), source_(source), options_(std::move(options)), txn_(store) {}

StatusOr<pb::PageSignature> Tier1::FetchSignature(const std::string& url, const pb::Tier1Page& page) {
  if (auto it = batch_signatures_.find(url); it != batch_signatures_.end()) return *it->second;
  if (auto it = reverify_signatures_.find(url); it != reverify_signatures_.end()) return it->second;
  if (!page.has_signature()) return NotFound("page " + url + " has no stored signature");
  return source_->Fetch(url, page.home_cell());
}

Status Tier1::LoadTodo() {
  if (todo_loaded_) return Status::Ok();
  std::string bytes;
  Status s = store_->rows().Get(store_->meta_family(), "todo", "", &bytes);
  if (s.code() == StatusCode::kNotFound) bytes.clear();
  else RETURN_IF_ERROR(s);
  pb::Tier1Todo todo;
  if (!todo.ParseFromString(bytes)) return Corruption("tier1: the meta row \"todo\" does not parse");
  std::vector<uint64_t>& groups = todo.flushed() ? deferred_reverify_ : reverify_;
  groups.insert(groups.end(), todo.reverify_groups().begin(), todo.reverify_groups().end());
  flushed_ = flushed_ || todo.flushed();
  repair_queue_.insert(repair_queue_.end(), todo.repair_candidates().begin(), todo.repair_candidates().end());
  todo_stored_ = std::move(bytes);
  todo_loaded_ = true;
  return Status::Ok();
}

std::string Tier1::TodoBytes() {
  auto sort_unique = [](std::vector<uint64_t>* v) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  };
  sort_unique(&repair_queue_);
  sort_unique(&reverify_);  // (kept short: it takes repeats)
  // Deferred groups exist only while flushed_ holds (Apply moves them to reverify_).
  std::vector<uint64_t> groups = reverify_;
  groups.insert(groups.end(), deferred_reverify_.begin(), deferred_reverify_.end());
  sort_unique(&groups);
  pb::Tier1Todo todo;
  todo.mutable_reverify_groups()->Add(groups.begin(), groups.end());
  todo.mutable_repair_candidates()->Add(repair_queue_.begin(), repair_queue_.end());
  todo.set_flushed(flushed_);
  return todo.SerializeAsString();
}

Status Tier1::ForgetCachedRecords() {
  if (!txn_.empty()) return FailedPrecondition("tier 1: records are cached with uncommitted changes");
  txn_.Discard();
  return Status::Ok();
}

Status Tier1::CommitWithTodo(bool durable, bool keep_cache) {
  RETURN_IF_ERROR(LoadTodo());
  std::string todo = TodoBytes();
  const bool todo_changed = todo != todo_stored_;
  if (todo_changed) txn_.PutMeta("todo", todo);
  RETURN_IF_ERROR(txn_.Commit(durable, keep_cache));
  if (todo_changed) todo_stored_ = std::move(todo);
  return Status::Ok();
}

Status Tier1::CommitWorkingSet(bool durable) {
  RETURN_IF_ERROR(CommitWithTodo(durable, /*keep_cache=*/true));
  // Past the bound, the records least recently used go: a quarter of the cache at least, so that
  // the scan over it is paid once every so many records read.
  if (txn_.cached() > options_.cache_records) return txn_.Evict(options_.cache_records / 2, options_.packed_cache_bytes);
  return Status::Ok();
}

}  // namespace neardup::tier1
