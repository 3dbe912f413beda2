// Inducer: the Crusher paper's clustering server (Section 4.4, Algorithm 2), in one process.
//
// ProcessEmail(m): the email's cluster keys (three MinHash values, in the `verified` mode each
// combined with the sender), then for each key h, CheckTemplateEligibility:
//   - h in the full-template cache (bounded LRU, per-entry TTL): ignore the email;
//   - store m in row h unless the row holds S emails (email and user cells with TTL), and read
//     the row's hot counts: s emails, n unique recipients, template t and its age;
//   - n >= k and no template: form one (stage 2). n >= k and age(t) >= A: re-induce. In the
//     `verified` mode a row is formed again when it has grown by half since its last formation, so
//     templates of a shared layout whose emails arrive later are found too (and a row whose first
//     formation found no template tries again at that pace, not on every email);
//   - n >= k, s >= S and a template: the row goes into the full-template cache.
// FormTemplate(h) (stage 2): read the row's emails, re-check k-anonymity on the live cells, split
// the row into templates (template_former.h), keep each template's id when its fixed text matches
// one the row (or, verified, another row of its emails) had, run the aggregators and replace the
// row's templates atomically.
//
// SEDA: stage 1 (features, MinHash, store, count) and stage 2 (formation) run on two StagePools
// sized by configuration, each with admission control that drops and counts. The hot state is
// sharded by key ranges balanced with the partitioner's BalanceRanges over sampled key weights, so
// skewed senders spread evenly over the shards' locks.
//
//   ASSIGN_OR_RETURN(auto inducer, Inducer::Open(options));
//   inducer->Offer(record);            // fire-and-forget; false when stage 1 dropped it
//   inducer->Drain();
//
// Logging: counts and ids only, never an email's subject, body or addresses.
//
// Thread safety: Offer, OfferPrepared, Process and the accessors may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "email/templates/cluster_store.h"
#include "email/templates/email_features.h"
#include "email/templates/lru_cache.h"
#include "email/templates/stage_pool.h"
#include "email/templates/template_former.h"
#include "email/templates/udca.h"
#include "proto/config.pb.h"

namespace neardup::email {

struct InducerOptions {
  pb::EmailConfig config;          // the email section, defaults filled in
  std::string path;                // the cluster store's directory
  const Clock* clock = nullptr;    // null = SystemClock()
  bool sync = false;
  bool async_writes = false;
  // Sampled cluster keys (each of weight 1): the key ranges are balanced on them. Empty: the
  // ranges split the key space evenly.
  std::vector<uint64_t> sample_keys;
  leveldb::Env* env = nullptr;
};

// An email ready for stage 1: what a row stores and the rows it goes to (1 to 3 keys; the
// benchmark's embedded template id is one key, bypassing MinHash as the paper's workload does).
struct PreparedEmail {
  pb::StoredEmail stored;
  std::vector<uint64_t> keys;
};

// Features, cluster keys (deduplicated, ascending) and the stored form of a record.
Status PrepareEmail(const EmailRecord& record, FingerprintMode mode, FeatureExtractor* extractor, PreparedEmail* out);

struct InducerStats {
  uint64_t emails = 0;             // emails processed by stage 1
  uint64_t dropped_emails = 0;     // refused by stage 1's admission control
  uint64_t dropped_formations = 0; // refused by stage 2's
  uint64_t cache_hits = 0;         // (email, key) pairs skipped by the full-template cache
  uint64_t stored = 0;             // (email, key) pairs stored
  uint64_t row_full = 0;           // not stored: the row held S emails
  uint64_t formations = 0;         // FormTemplate runs
  uint64_t reinductions = 0;       // of them, of a row that had templates (age A, or grown)
  uint64_t new_templates = 0;      // template ids formed for the first time
  double key_range_imbalance = 1;  // heaviest key range's sampled weight over the mean
};

class Inducer {
 public:
  static StatusOr<std::unique_ptr<Inducer>> Open(InducerOptions options);
  ~Inducer();

  // Computes the email's features and processes it on stage 1. False when stage 1 is saturated
  // (dropped and counted). `wait`: wait for room instead of dropping (a file replay).
  bool Offer(EmailRecord record, bool wait = false);
  bool OfferPrepared(PreparedEmail email, bool wait = false);
  // Several emails as one stage-1 task, stored in one row-store write (ProcessBatch).
  bool OfferBatch(std::vector<PreparedEmail> emails, bool wait = false);
  // ProcessEmail on the calling thread (formation still goes to stage 2).
  Status Process(const EmailRecord& record);
  Status ProcessPrepared(const PreparedEmail& email);
  // ProcessEmail for each email in order, their rows' cells written in one atomic row-store batch
  // before the eligibility checks (the full-template cache is consulted once, before the write).
  Status ProcessBatch(std::span<const PreparedEmail> emails);
  // Waits until both stages are idle. Returns the first error a stage met, if any.
  Status Drain();

  // Called with each template id formed for the first time (from stage 2's threads).
  void set_on_new_template(std::function<void(const pb::EmailTemplate&)> f) { on_new_template_ = std::move(f); }

  InducerStats stats() const;
  ClusterStore* store() { return store_.get(); }
  const FormationOptions& formation() const { return formation_; }
  FingerprintMode mode() const { return formation_.mode; }
  int shingle_k() const { return static_cast<int>(options_.config.shingle_k()); }
  const std::vector<partitioner::ValueRange>& ranges() const { return ranges_; }
  const std::vector<std::unique_ptr<Udca>>& udcas() const { return udcas_; }

  // Prepares a record on the calling thread: features, keys, the stored form.
  Status Prepare(const EmailRecord& record, FeatureExtractor* extractor, PreparedEmail* out) const;

 private:
  explicit Inducer(InducerOptions options);
  // Runs `work` on stage 1 (waiting for room when `wait`, else dropped when full: false); an
  // error it returns goes to Fail.
  bool Submit(std::function<Status()> work, bool wait);
  // Algorithm 2's checks on a row's counts after an email was offered to it.
  void CheckTemplateEligibility(uint64_t key, const RowCounts& counts, int64_t now);
  Status FormTemplate(uint64_t key);
  void ScheduleFormation(uint64_t key);
  void Fail(const Status& s);
  int64_t Now() const { return clock_->NowMillis(); }

  InducerOptions options_;
  const Clock* clock_;
  FormationOptions formation_;
  std::vector<std::unique_ptr<Udca>> udcas_;
  std::vector<partitioner::ValueRange> ranges_;
  std::unique_ptr<ClusterStore> store_;
  LruTtlSet full_cache_;
  std::mutex forming_mu_;
  std::unordered_set<uint64_t> forming_;  // rows queued or being formed
  std::mutex error_mu_;
  Status error_;
  std::function<void(const pb::EmailTemplate&)> on_new_template_;
  // The template ids of the store (verified mode), by sender: each with the fixed text it was last
  // formed with and the rows that hold it. A formation chooses its variants' ids and registers them
  // under one lock, so two rows forming one template (at once on two threads, or one after the
  // other with cores that drifted as the template gathered emails) end with one id. Loaded from the
  // store at Open; an id no row holds any more is forgotten.
  struct IdEntry {
    uint64_t sender = 0;
    std::vector<uint64_t> core;
    std::unordered_set<uint64_t> rows;
  };
  // The ids for a row's variants (one each, distinct): the sender's id whose core is the most
  // similar (Jaccard >= merge_jaccard), else a new one; registers them for `row` and releases the
  // row's old ids it no longer holds. `is_new[i]`: variant i's id was not known before.
  std::vector<uint64_t> ChooseIds(uint64_t row, uint64_t sender, const std::vector<Variant>& variants,
                                  std::span<const pb::StoredEmail> emails, std::span<const pb::EmailTemplate> old,
                                  std::vector<bool>* is_new);
  Status LoadIds();
  std::mutex ids_mu_;
  std::unordered_map<uint64_t, IdEntry> ids_;
  std::unordered_map<uint64_t, std::vector<uint64_t>> sender_ids_;
  std::atomic<uint64_t> emails_{0}, cache_hits_{0}, stored_{0}, row_full_{0}, formations_{0}, reinductions_{0},
      new_templates_{0};
  double imbalance_ = 1;
  bool store_text_ = true;  // a configured aggregator reads the emails' text blocks
  // Declared last: destroyed (drained and joined) first, while everything they use still exists.
  std::unique_ptr<StagePool> formation_pool_;
  std::unique_ptr<StagePool> cluster_pool_;
};

}  // namespace neardup::email
