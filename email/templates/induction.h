// Induction over a file of emails: what `neardup email induce` and `email eval` run.
//
// The emails are read and prepared (features, keys), the key ranges balanced on their keys, and
// the emails replayed through an Inducer in input order on an event-time clock (each email's
// sent_at; an email without one keeps the time of the one before), through the configured stages
// (threads 0: on this thread, deterministic). At the end every email is annotated with the final
// template snapshot: its assignment.
//
//   ASSIGN_OR_RETURN(InductionResult r, InduceFile("emails.jsonl", config.email(), store_dir, {}));
//   RETURN_IF_ERROR(WriteTemplatesJsonl("templates.jsonl", *r.snapshot));
//
// Thread safety: one call at a time per store directory.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "email/templates/annotator.h"
#include "email/templates/email_reader.h"
#include "email/templates/evaluation.h"
#include "email/templates/inducer.h"

namespace neardup::email {

// A template id formed for the first time: when (store clock) and after how many emails of the
// replay.
struct Discovery {
  int64_t formed_ms = 0;
  uint64_t emails_processed = 0;
};

struct InductionResult {
  std::vector<std::string> ids;                       // the emails' ids, in input order
  std::vector<int64_t> sent_ms;                       // their event times
  std::vector<std::optional<uint64_t>> assignments;   // their templates
  std::shared_ptr<const TemplateSnapshot> snapshot;   // the final templates (k-anonymous only)
  std::map<uint64_t, Discovery> discoveries;          // by template id
  InducerStats stats;
  EmailReaderStats reader;
  double seconds = 0;                                 // replay and annotation, wall clock
};

StatusOr<InductionResult> InduceFile(const std::string& input, const pb::EmailConfig& config,
                                     const std::string& store_dir, const EmailReaderOptions& reader_options);

// One template per line (TemplateJson); one `{"id": ..., "template": "hex" | null}` per email.
Status WriteTemplatesJsonl(const std::string& path, const TemplateSnapshot& snapshot);
Status WriteAssignmentsJsonl(const std::string& path, const InductionResult& r);

// Template discovery delay per true template label (labels by email index; "none" skipped): the
// template most of the label's emails were assigned, the emails of the label seen until it was
// first formed, and the seconds from the label's first email to then.
struct LabelDelay {
  std::string label;
  uint64_t emails_needed = 0;
  double seconds = 0;
  bool discovered = false;
};
std::vector<LabelDelay> DiscoveryDelays(const InductionResult& r, const std::vector<std::string>& labels);

// The offline baseline beside the online delay (the Crusher paper's Table 1: Juicer's batch
// MapReduce against Crusher): every `period_ms` of event time from the first email, the emails
// seen so far are sampled at `sample_rate` (by a hash of the id, so a batch keeps its sample) and
// clustered from scratch with k scaled to the sample, at least `min_k`: ceil(k * sample_rate)
// unique recipients. A label counts as discovered at the first batch whose templates annotate one
// of its emails seen by then; emails needed are its emails seen by then, seconds from its first
// email. Labels as for DiscoveryDelays ("none" skipped).
struct BatchOptions {
  double sample_rate = 0.005;
  int64_t period_ms = 24ll * 3600 * 1000;
  uint32_t min_k = 2;
};
struct BatchDelayResult {
  uint32_t k = 0;               // the scaled k
  uint64_t sampled = 0;         // emails in the last batch's sample
  uint32_t batches = 0;
  std::vector<LabelDelay> delays;
};
StatusOr<BatchDelayResult> BatchDiscoveryDelays(const std::string& input, const pb::EmailConfig& config,
                                                const std::string& store_dir, const EmailReaderOptions& reader_options,
                                                const std::vector<std::string>& labels, const BatchOptions& batch);

}  // namespace neardup::email
