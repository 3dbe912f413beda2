#include "email/templates/induction.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <xxhash.h>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <unordered_map>

#include "common/json_write.h"

namespace neardup::email {

StatusOr<InductionResult> InduceFile(const std::string& input, const pb::EmailConfig& config,
                                     const std::string& store_dir, const EmailReaderOptions& reader_options) {
  ASSIGN_OR_RETURN(const FingerprintMode mode, ParseFingerprintMode(config.mode()));
  ASSIGN_OR_RETURN(auto reader, EmailReader::Open(input, reader_options));
  ASSIGN_OR_RETURN(auto extractor, FeatureExtractor::Create(static_cast<int>(config.shingle_k())));
  InductionResult r;
  std::vector<PreparedEmail> prepared;
  std::vector<uint64_t> sample;
  EmailRecord rec;
  int64_t last_ms = 0;
  while (reader->Next(&rec)) {
    PreparedEmail p;
    RETURN_IF_ERROR(PrepareEmail(rec, mode, extractor.get(), &p));
    for (uint64_t k : p.keys) sample.push_back(k);
    if (rec.sent_at_ms) last_ms = *rec.sent_at_ms;
    r.ids.push_back(rec.id);
    r.sent_ms.push_back(last_ms);
    prepared.push_back(std::move(p));
  }
  RETURN_IF_ERROR(reader->status());
  r.reader = reader->stats();
  spdlog::info("email: {}", reader->Summary());

  const auto t0 = std::chrono::steady_clock::now();
  ManualClock clock(r.sent_ms.empty() ? 0 : r.sent_ms.front());
  InducerOptions o;
  o.config = config;
  o.path = store_dir;
  o.clock = &clock;
  o.sample_keys = std::move(sample);
  ASSIGN_OR_RETURN(auto inducer, Inducer::Open(std::move(o)));
  std::mutex mu;
  uint64_t processed = 0;
  inducer->set_on_new_template([&](const pb::EmailTemplate& t) {
    std::lock_guard<std::mutex> lock(mu);
    r.discoveries.emplace(t.id(), Discovery{t.created_ms(), processed});
  });
  for (size_t i = 0; i < prepared.size(); ++i) {
    clock.Set(std::max(clock.NowMillis(), r.sent_ms[i]));
    {
      std::lock_guard<std::mutex> lock(mu);
      processed = i + 1;
    }
    if (config.cluster_threads() == 0) {
      RETURN_IF_ERROR(inducer->ProcessPrepared(prepared[i]));
    } else {
      inducer->OfferPrepared(prepared[i], /*wait=*/true);  // a file loses nothing
    }
  }
  RETURN_IF_ERROR(inducer->Drain());
  Annotator annotator(inducer.get(), /*forward=*/false, config.snapshot_refresh_ms());
  RETURN_IF_ERROR(annotator.Refresh());
  r.snapshot = annotator.snapshot();
  for (const auto& p : prepared) r.assignments.push_back(annotator.AnnotatePrepared(p).template_id);
  r.stats = inducer->stats();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

Status WriteTemplatesJsonl(const std::string& path, const TemplateSnapshot& snapshot) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return IoError("cannot write " + path);
  for (const pb::EmailTemplate* t : snapshot.Unique()) {
    const std::string line = TemplateJson(*t, snapshot.RowsOf(t->id())) + "\n";
    std::fwrite(line.data(), 1, line.size(), f);
  }
  if (std::fclose(f) != 0) return IoError("cannot write " + path);
  return Status::Ok();
}

Status WriteAssignmentsJsonl(const std::string& path, const InductionResult& r) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return IoError("cannot write " + path);
  std::string line;
  for (size_t i = 0; i < r.ids.size(); ++i) {
    line = "{\"id\":";
    AppendJsonString(&line, r.ids[i]);
    line += ",\"template\":";
    line += r.assignments[i] ? "\"" + HexId(*r.assignments[i]) + "\"" : "null";
    line += "}\n";
    std::fwrite(line.data(), 1, line.size(), f);
  }
  if (std::fclose(f) != 0) return IoError("cannot write " + path);
  return Status::Ok();
}

StatusOr<BatchDelayResult> BatchDiscoveryDelays(const std::string& input, const pb::EmailConfig& config,
                                                const std::string& store_dir, const EmailReaderOptions& reader_options,
                                                const std::vector<std::string>& labels, const BatchOptions& batch) {
  if (!(batch.sample_rate > 0 && batch.sample_rate <= 1)) return InvalidArgument("batch sample rate must be in (0, 1]");
  if (batch.period_ms <= 0) return InvalidArgument("batch period must be positive");
  ASSIGN_OR_RETURN(const FingerprintMode mode, ParseFingerprintMode(config.mode()));
  ASSIGN_OR_RETURN(auto reader, EmailReader::Open(input, reader_options));
  ASSIGN_OR_RETURN(auto extractor, FeatureExtractor::Create(static_cast<int>(config.shingle_k())));
  std::vector<PreparedEmail> prepared;
  std::vector<int64_t> sent;
  std::vector<bool> sampled;
  EmailRecord rec;
  int64_t last_ms = 0;
  const uint64_t threshold = static_cast<uint64_t>(batch.sample_rate * 18446744073709551615.0);
  while (reader->Next(&rec)) {
    PreparedEmail p;
    RETURN_IF_ERROR(PrepareEmail(rec, mode, extractor.get(), &p));
    if (rec.sent_at_ms) last_ms = *rec.sent_at_ms;
    sent.push_back(last_ms);
    sampled.push_back(batch.sample_rate >= 1 || XXH3_64bits(rec.id.data(), rec.id.size()) < threshold);
    prepared.push_back(std::move(p));
  }
  RETURN_IF_ERROR(reader->status());
  if (labels.size() != prepared.size()) return InvalidArgument("batch delays: one label per email wanted");
  BatchDelayResult r;
  r.k = std::max<uint32_t>(batch.min_k, static_cast<uint32_t>(std::ceil(config.k() * batch.sample_rate)));
  pb::EmailConfig c = config;
  c.set_k(r.k);
  c.set_cluster_threads(0);
  c.set_formation_threads(0);
  std::map<std::string, size_t> first;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] != "none") first.emplace(labels[i], i);
  }
  std::map<std::string, LabelDelay> found;
  if (prepared.empty()) return r;
  for (int64_t at = sent.front() + batch.period_ms;; at += batch.period_ms) {
    // The batch run at `at`: the sample of every email sent before it, clustered from scratch.
    size_t seen = 0;
    while (seen < sent.size() && sent[seen] < at) ++seen;
    const std::string dir = store_dir + "/batch-" + std::to_string(r.batches++);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(store_dir);
    ManualClock clock(at);
    InducerOptions o;
    o.config = c;
    o.path = dir;
    o.clock = &clock;
    for (size_t i = 0; i < seen; ++i) {
      if (sampled[i]) o.sample_keys.insert(o.sample_keys.end(), prepared[i].keys.begin(), prepared[i].keys.end());
    }
    {
      ASSIGN_OR_RETURN(auto inducer, Inducer::Open(std::move(o)));
      r.sampled = 0;
      for (size_t i = 0; i < seen; ++i) {
        if (!sampled[i]) continue;
        ++r.sampled;
        RETURN_IF_ERROR(inducer->ProcessPrepared(prepared[i]));
      }
      RETURN_IF_ERROR(inducer->Drain());
      Annotator annotator(inducer.get(), /*forward=*/false, config.snapshot_refresh_ms());
      RETURN_IF_ERROR(annotator.Refresh());
      for (size_t i = 0; i < seen; ++i) {
        if (labels[i] == "none" || found.count(labels[i])) continue;
        if (!annotator.AnnotatePrepared(prepared[i]).template_id) continue;
        LabelDelay d;
        d.label = labels[i];
        d.discovered = true;
        d.seconds = static_cast<double>(at - sent[first.at(labels[i])]) / 1000.0;
        for (size_t j = 0; j < seen; ++j) d.emails_needed += labels[j] == labels[i];
        found.emplace(labels[i], d);
      }
    }
    std::filesystem::remove_all(dir);
    if (seen == sent.size()) break;
  }
  for (const auto& [label, index] : first) {
    auto it = found.find(label);
    if (it != found.end()) {
      r.delays.push_back(it->second);
    } else {
      LabelDelay d;
      d.label = label;
      r.delays.push_back(d);
    }
  }
  return r;
}

std::vector<LabelDelay> DiscoveryDelays(const InductionResult& r, const std::vector<std::string>& labels) {
  std::map<std::string, std::map<uint64_t, uint64_t>> votes;
  std::map<std::string, size_t> first;
  for (size_t i = 0; i < labels.size() && i < r.assignments.size(); ++i) {
    if (labels[i] == "none") continue;
    first.emplace(labels[i], i);
    if (r.assignments[i]) ++votes[labels[i]][*r.assignments[i]];
  }
  std::vector<LabelDelay> out;
  for (const auto& [label, first_index] : first) {
    LabelDelay d;
    d.label = label;
    uint64_t best = 0, best_votes = 0;
    for (const auto& [t, n] : votes[label]) {
      if (n > best_votes) best = t, best_votes = n;
    }
    auto it = r.discoveries.find(best);
    if (best_votes > 0 && it != r.discoveries.end()) {
      d.discovered = true;
      d.seconds = static_cast<double>(it->second.formed_ms - r.sent_ms[first_index]) / 1000.0;
      for (size_t i = 0; i < it->second.emails_processed && i < labels.size(); ++i) d.emails_needed += labels[i] == label;
    }
    out.push_back(d);
  }
  return out;
}

}  // namespace neardup::email
