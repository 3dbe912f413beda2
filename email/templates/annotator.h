// The annotation path (the Crusher paper's Section 4.2): a read-optimised template snapshot and
// Annotate(email).
//
// TemplateSnapshot: every live template of the cluster store with at least k unique recipients
// (a template under k is never exported: not in a snapshot, not in templates.jsonl), indexed by
// row key and by id, immutable once built. The Annotator rebuilds it from the store when it is
// older than email.snapshot_refresh_ms (by the store's clock) and swaps it in. A server calls
// RefreshEvery: a thread of the annotator's own then rebuilds it on that period and Annotate never
// rebuilds (a lookup never waits for a rebuild); without it (a file replay on event time),
// Annotate rebuilds a stale snapshot first.
//
// Annotate computes the email's features and cluster keys, finds its template among the
// snapshot's templates of those rows (template_former.h's MatchTemplate), lets each aggregator
// apply its annotation to the email (the resolved dates, the extracted fields, the vertical), and
// forwards the email to the inducer fire-and-forget (Offer, which drops rather than waits).
//
//   Annotator annotator(inducer.get(), config);
//   ASSIGN_OR_RETURN(Annotation a, annotator.Annotate(record));
//
// Thread safety: Annotate may be called from several threads (each uses its own parser).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "email/templates/cluster_store.h"
#include "email/templates/inducer.h"

namespace neardup::email {

class TemplateSnapshot {
 public:
  // Reads every live template with recipients >= k.
  static StatusOr<std::shared_ptr<const TemplateSnapshot>> Build(const ClusterStore& store, uint32_t k, int64_t now_ms);

  // The templates of a row (empty span when none).
  std::span<const pb::EmailTemplate* const> Row(uint64_t key) const;
  const pb::EmailTemplate* Find(uint64_t id) const;
  // One template per id (a template formed in several rows: the copy with the most emails), by id.
  std::vector<const pb::EmailTemplate*> Unique() const;
  // The rows holding a template id, ascending.
  std::vector<uint64_t> RowsOf(uint64_t id) const;
  size_t size() const { return all_.size(); }
  int64_t built_ms() const { return built_ms_; }

 private:
  std::vector<pb::EmailTemplate> all_;
  std::unordered_map<uint64_t, std::vector<const pb::EmailTemplate*>> by_row_;
  std::unordered_map<uint64_t, const pb::EmailTemplate*> by_id_;
  int64_t built_ms_ = 0;
};

struct Annotation {
  std::optional<uint64_t> template_id;
  std::vector<std::pair<std::string, std::string>> values;  // (aggregator, JSON) for the email
};

class Annotator {
 public:
  // `inducer` outlives the annotator; `forward`: offer every annotated email to it.
  Annotator(Inducer* inducer, bool forward, uint64_t refresh_ms);
  // Stops the refresh thread, if any.
  ~Annotator();
  Annotator(const Annotator&) = delete;
  Annotator& operator=(const Annotator&) = delete;

  // Rebuilds the snapshot now, then every `period_ms` (wall time) on a thread of its own until the
  // annotator is destroyed; a failed rebuild is logged and the previous snapshot kept. Call once.
  Status RefreshEvery(uint64_t period_ms);  // before the first Annotate
  // Snapshots built, and rebuilds that failed (kept the previous one).
  uint64_t refreshes() const { return refreshes_.load(); }
  uint64_t failed_refreshes() const { return failed_refreshes_.load(); }

  StatusOr<Annotation> Annotate(const EmailRecord& record);
  // The annotation of an email already prepared (features and keys), without forwarding it.
  Annotation AnnotatePrepared(const PreparedEmail& email);
  // Rebuilds the snapshot now.
  Status Refresh();
  std::shared_ptr<const TemplateSnapshot> snapshot() const;

 private:
  Status MaybeRefresh();
  Inducer* inducer_;
  bool forward_;
  uint64_t refresh_ms_;
  mutable std::mutex mu_;  // guards snapshot_ (the pointer; the snapshot is immutable)
  std::shared_ptr<const TemplateSnapshot> snapshot_;
  std::mutex refresh_mu_;  // one rebuild at a time
  std::atomic<uint64_t> refreshes_{0}, failed_refreshes_{0};
  // The background refresh (RefreshEvery).
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::atomic<bool> background_{false};
  std::thread refresher_;
};

// One annotated email as a JSON object: {"id": ..., "template": "16 hex digits" or null,
// "annotations": {aggregator: value, ...}}.
std::string AnnotationJson(std::string_view email_id, const Annotation& a);

// JSON of a template for templates.jsonl: id (16 hex digits), rows, emails, recipients,
// created_at, first_email_at, subject_pattern, fixed_shingles (count), annotations (object).
std::string TemplateJson(const pb::EmailTemplate& t, const std::vector<uint64_t>& rows);
std::string HexId(uint64_t id);

}  // namespace neardup::email
