// The annotation path (the Crusher paper's Section 4.2): a read-optimised template snapshot and
// Annotate(email).
//
// TemplateSnapshot: every live template of the cluster store with at least k unique recipients
// (a template under k is never exported: not in a snapshot, not in templates.jsonl), indexed by
// row key and by id, immutable once built. The Annotator rebuilds it from the store when it is
// older than email.snapshot_refresh_ms (by the store's clock) and swaps it in; lookups never wait
// for a rebuild.
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

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "email/cluster_store.h"
#include "email/inducer.h"

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
};

// JSON of a template for templates.jsonl: id (16 hex digits), rows, emails, recipients,
// created_at, first_email_at, subject_pattern, fixed_shingles (count), annotations (object).
std::string TemplateJson(const pb::EmailTemplate& t, const std::vector<uint64_t>& rows);
std::string HexId(uint64_t id);

}  // namespace neardup::email
