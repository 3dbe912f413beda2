#include "email/templates/inducer.h"

#include <spdlog/spdlog.h>
#include <xxhash.h>

#include <algorithm>

#include "document/shingle.h"

namespace neardup::email {

Inducer::Inducer(InducerOptions options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : SystemClock()),
      full_cache_(options_.config.full_cache_entries(), static_cast<int64_t>(options_.config.full_cache_ttl_ms())) {}

Inducer::~Inducer() {
  // Stage 1 feeds stage 2: drain it first.
  cluster_pool_.reset();
  formation_pool_.reset();
}

StatusOr<std::unique_ptr<Inducer>> Inducer::Open(InducerOptions options) {
  std::unique_ptr<Inducer> in(new Inducer(std::move(options)));
  const pb::EmailConfig& c = in->options_.config;
  ASSIGN_OR_RETURN(in->formation_, FormationOptionsFrom(c));
  ASSIGN_OR_RETURN(in->udcas_, UdcaRegistry::Global().Create(c));
  in->store_text_ = std::any_of(in->udcas_.begin(), in->udcas_.end(), [](const auto& u) { return u->ReadsText(); });
  // Key ranges from the sampled weights (the partitioner's one-dimensional balancer).
  std::vector<partitioner::WeightedValue> sample;
  sample.reserve(in->options_.sample_keys.size());
  for (uint64_t k : in->options_.sample_keys) sample.push_back({k, 1.0});
  if (sample.empty()) {
    // No sample: evenly spaced keys, so the ranges split the key space evenly.
    const uint64_t n = c.key_ranges();
    for (uint64_t i = 0; i < n; ++i) sample.push_back({i * (UINT64_MAX / n), 1.0});
  }
  ASSIGN_OR_RETURN(in->ranges_, partitioner::BalanceRanges(std::move(sample), {.ranges = c.key_ranges()}));
  in->imbalance_ = partitioner::ImbalanceFactor(in->ranges_);
  ClusterStoreOptions so;
  so.path = in->options_.path;
  so.clock = in->clock_;
  so.max_emails_per_row = c.max_emails_per_row();
  so.email_ttl_ms = static_cast<int64_t>(c.email_ttl_ms());
  so.template_ttl_ms = static_cast<int64_t>(c.template_ttl_ms());
  so.ranges = in->ranges_;
  so.sync = in->options_.sync;
  so.async_writes = in->options_.async_writes;
  so.env = in->options_.env;
  ASSIGN_OR_RETURN(in->store_, ClusterStore::Open(so));
  RETURN_IF_ERROR(in->LoadIds());
  in->formation_pool_ = std::make_unique<StagePool>("nd-email-form", static_cast<int>(c.formation_threads()),
                                                    c.formation_queue());
  in->cluster_pool_ = std::make_unique<StagePool>("nd-email-clu", static_cast<int>(c.cluster_threads()), c.cluster_queue());
  spdlog::debug("email: inducer open, mode {}, k {}, S {}, {} key ranges (imbalance {:.3f}), stages {}+{} threads",
                FingerprintModeName(in->formation_.mode), c.k(), c.max_emails_per_row(), in->ranges_.size(),
                in->imbalance_, c.cluster_threads(), c.formation_threads());
  return in;
}

Status Inducer::Prepare(const EmailRecord& record, FeatureExtractor* extractor, PreparedEmail* out) const {
  return PrepareEmail(record, formation_.mode, extractor, out);
}

Status PrepareEmail(const EmailRecord& record, FingerprintMode mode, FeatureExtractor* extractor, PreparedEmail* out) {
  EmailFeatures f;
  RETURN_IF_ERROR(extractor->Extract(record, &f));
  const auto keys = ClusterKeys(mode, f);
  out->stored = ToStored(record, f, keys);
  out->keys.assign(keys.begin(), keys.end());
  std::sort(out->keys.begin(), out->keys.end());
  out->keys.erase(std::unique(out->keys.begin(), out->keys.end()), out->keys.end());
  return Status::Ok();
}

namespace {

FeatureExtractor* ThreadExtractor(int k) {
  thread_local std::unique_ptr<FeatureExtractor> extractor;
  thread_local int extractor_k = 0;
  if (extractor == nullptr || extractor_k != k) {
    auto e = FeatureExtractor::Create(k);
    if (!e.ok()) return nullptr;
    extractor = std::move(*e);
    extractor_k = k;
  }
  return extractor.get();
}

}  // namespace

Status Inducer::Process(const EmailRecord& record) {
  FeatureExtractor* extractor = ThreadExtractor(static_cast<int>(options_.config.shingle_k()));
  if (extractor == nullptr) return Internal("email: cannot create an HTML parser");
  PreparedEmail p;
  RETURN_IF_ERROR(Prepare(record, extractor, &p));
  return ProcessPrepared(p);
}

bool Inducer::Submit(std::function<Status()> work, bool wait) {
  auto task = [this, w = std::move(work)] {
    if (Status s = w(); !s.ok()) Fail(s);
  };
  if (wait) {
    cluster_pool_->Run(std::move(task));
    return true;
  }
  return cluster_pool_->TryRun(std::move(task));
}

bool Inducer::Offer(EmailRecord record, bool wait) {
  return Submit([this, r = std::move(record)] { return Process(r); }, wait);
}

bool Inducer::OfferPrepared(PreparedEmail email, bool wait) {
  return Submit([this, e = std::move(email)] { return ProcessPrepared(e); }, wait);
}

bool Inducer::OfferBatch(std::vector<PreparedEmail> emails, bool wait) {
  return Submit([this, e = std::move(emails)] { return ProcessBatch(e); }, wait);
}

Status Inducer::ProcessPrepared(const PreparedEmail& email) { return ProcessBatch(std::span<const PreparedEmail>(&email, 1)); }

Status Inducer::ProcessBatch(std::span<const PreparedEmail> emails) {
  emails_ += emails.size();
  // What a row keeps of an email: without text blocks when no aggregator reads them.
  std::vector<pb::StoredEmail> compact;
  if (!store_text_) compact.reserve(emails.size());
  const int64_t now = Now();
  std::vector<ClusterStore::NewEmail> items;
  for (const PreparedEmail& e : emails) {
    const pb::StoredEmail* stored = &e.stored;
    if (!store_text_ && e.stored.blocks_size() > 0) {
      pb::StoredEmail& c = compact.emplace_back();
      c.set_id(e.stored.id());
      c.set_recipient(e.stored.recipient());
      c.set_sender(e.stored.sender());
      c.set_subject(e.stored.subject());
      c.set_sent_at_ms(e.stored.sent_at_ms());
      *c.mutable_keys() = e.stored.keys();
      *c.mutable_shingles() = e.stored.shingles();
      stored = &c;
    }
    for (uint64_t key : e.keys) {
      if (full_cache_.Contains(key, now)) {
        ++cache_hits_;
        continue;
      }
      items.push_back({key, stored});
    }
  }
  if (items.empty()) return Status::Ok();
  // One row-store write for the batch; the eligibility checks follow it, so that a formation
  // reads every email the counts saw.
  std::vector<RowCounts> counts;
  RETURN_IF_ERROR(store_->AddEmails(items, &counts));
  for (size_t i = 0; i < items.size(); ++i) CheckTemplateEligibility(items[i].row, counts[i], now);
  return Status::Ok();
}

void Inducer::CheckTemplateEligibility(uint64_t key, const RowCounts& c, int64_t now) {
  if (c.stored) ++stored_; else ++row_full_;
  const pb::EmailConfig& cfg = options_.config;
  if (c.users < cfg.k()) return;
  if (!c.has_template) {
    const bool first = c.emails_at_formation == 0;
    if (first || 2 * static_cast<uint64_t>(c.emails) >= 3 * static_cast<uint64_t>(c.emails_at_formation)) {
      ScheduleFormation(key);
    }
    return;
  }
  if (now - c.template_created_ms >= static_cast<int64_t>(cfg.reinduce_age_ms())) {
    ScheduleFormation(key);
  } else if (formation_.mode == FingerprintMode::kVerified && c.stored &&
             2 * static_cast<uint64_t>(c.emails) >= 3 * static_cast<uint64_t>(c.emails_at_formation)) {
    ScheduleFormation(key);
  }
  if (c.emails >= cfg.max_emails_per_row()) full_cache_.Insert(key, now);
}

void Inducer::ScheduleFormation(uint64_t key) {
  {
    std::lock_guard<std::mutex> lock(forming_mu_);
    if (!forming_.insert(key).second) return;  // queued already
  }
  const bool accepted = formation_pool_->TryRun([this, key] {
    if (Status s = FormTemplate(key); !s.ok()) Fail(s);
    std::lock_guard<std::mutex> lock(forming_mu_);
    forming_.erase(key);
  });
  if (!accepted) {
    std::lock_guard<std::mutex> lock(forming_mu_);
    forming_.erase(key);
  }
}

Status Inducer::FormTemplate(uint64_t key) {
  ++formations_;
  std::vector<pb::StoredEmail> emails;
  RETURN_IF_ERROR(store_->ReadEmails(key, &emails));
  // Re-check k-anonymity on the live cells.
  std::unordered_set<uint64_t> users;
  for (const auto& e : emails) users.insert(e.recipient());
  if (users.size() < formation_.k) return Status::Ok();
  // Arrival order (stored time, then id): leader clustering depends on it.
  std::stable_sort(emails.begin(), emails.end(), [](const pb::StoredEmail& a, const pb::StoredEmail& b) {
    return a.stored_ms() != b.stored_ms() ? a.stored_ms() < b.stored_ms() : a.id() < b.id();
  });
  const std::vector<Variant> variants = SplitRow(emails, formation_);
  std::vector<pb::EmailTemplate> old;
  RETURN_IF_ERROR(store_->ReadTemplates(key, &old));
  if (!old.empty()) ++reinductions_;
  std::vector<bool> is_new(variants.size(), true);
  std::vector<uint64_t> ids;
  if (formation_.mode == FingerprintMode::kPaper) {
    ids.assign(variants.size(), key);  // the paper: the cluster's MinHash is its template id
    std::lock_guard<std::mutex> lock(ids_mu_);
    for (size_t i = 0; i < variants.size(); ++i) is_new[i] = ids_.try_emplace(key).second;
  } else {
    // A row's emails share their sender: the keys are seeded with it.
    ids = ChooseIds(key, emails.empty() ? 0 : emails.front().sender(), variants, emails, old, &is_new);
  }
  const int64_t now = Now();
  std::vector<pb::EmailTemplate> formed;
  for (size_t i = 0; i < variants.size(); ++i) formed.push_back(BuildTemplate(key, ids[i], emails, variants[i], udcas_, now));
  RETURN_IF_ERROR(store_->WriteTemplates(key, formed, static_cast<uint32_t>(emails.size())));
  for (size_t i = 0; i < formed.size(); ++i) {
    if (!is_new[i]) continue;
    const pb::EmailTemplate& t = formed[i];
    ++new_templates_;
    spdlog::debug("email: template {:016x} formed in row {:016x} from {} emails, {} recipients", t.id(), key, t.emails(),
                  t.recipients());
    if (on_new_template_) on_new_template_(t);
  }
  return Status::Ok();
}

std::vector<uint64_t> Inducer::ChooseIds(uint64_t row, uint64_t sender, const std::vector<Variant>& variants,
                                         std::span<const pb::StoredEmail> emails, std::span<const pb::EmailTemplate> old,
                                         std::vector<bool>* is_new) {
  std::vector<uint64_t> ids;
  std::unordered_set<uint64_t> used;
  std::lock_guard<std::mutex> lock(ids_mu_);
  std::vector<uint64_t>& of_sender = sender_ids_[sender];
  for (size_t i = 0; i < variants.size(); ++i) {
    const Variant& v = variants[i];
    uint64_t best = 0;
    double best_j = -1;
    for (uint64_t id : of_sender) {
      if (used.count(id)) continue;
      const double j = Jaccard(ids_.at(id).core, v.core);
      if (j >= formation_.merge_jaccard && (j > best_j || (j == best_j && id < best))) {
        best = id;
        best_j = j;
      }
    }
    uint64_t id = best;
    if (best_j < 0) {
      const std::string& first = emails[v.members.front()].id();
      id = XXH3_64bits_withSeed(first.data(), first.size(), row);
      while (used.count(id) || ids_.count(id)) ++id;  // an id names one template
      of_sender.push_back(id);
    }
    IdEntry& entry = ids_[id];
    (*is_new)[i] = entry.rows.empty() && best_j < 0;
    entry.sender = sender;
    entry.core = v.core;
    entry.rows.insert(row);
    used.insert(id);
    ids.push_back(id);
  }
  // The row's old ids it no longer holds; an id no row holds is forgotten.
  for (const pb::EmailTemplate& t : old) {
    if (used.count(t.id())) continue;
    auto it = ids_.find(t.id());
    if (it == ids_.end()) continue;
    it->second.rows.erase(row);
    if (!it->second.rows.empty()) continue;
    std::vector<uint64_t>& list = sender_ids_[it->second.sender];
    list.erase(std::remove(list.begin(), list.end(), t.id()), list.end());
    ids_.erase(it);
  }
  return ids;
}

Status Inducer::LoadIds() {
  if (formation_.mode == FingerprintMode::kPaper) return Status::Ok();
  std::unordered_map<uint64_t, int64_t> newest;  // id -> created_ms of the core kept
  return store_->ScanTemplates([&](uint64_t row, const pb::EmailTemplate& t) {
    auto [it, inserted] = ids_.try_emplace(t.id());
    IdEntry& entry = it->second;
    if (inserted) sender_ids_[t.sender()].push_back(t.id());
    entry.rows.insert(row);
    int64_t& at = newest[t.id()];
    if (inserted || t.created_ms() >= at) {
      at = t.created_ms();
      entry.sender = t.sender();
      entry.core.assign(t.core().begin(), t.core().end());
    }
    return true;
  });
}

void Inducer::Fail(const Status& s) {
  std::lock_guard<std::mutex> lock(error_mu_);
  if (error_.ok()) {
    error_ = s;
    spdlog::error("email: {}", s.message());
  }
}

Status Inducer::Drain() {
  cluster_pool_->Drain();
  formation_pool_->Drain();
  RETURN_IF_ERROR(store_->WaitForWrites());
  std::lock_guard<std::mutex> lock(error_mu_);
  return error_;
}

InducerStats Inducer::stats() const {
  InducerStats s;
  s.emails = emails_;
  s.dropped_emails = cluster_pool_->dropped();
  s.dropped_formations = formation_pool_->dropped();
  s.cache_hits = cache_hits_;
  s.stored = stored_;
  s.row_full = row_full_;
  s.formations = formations_;
  s.reinductions = reinductions_;
  s.new_templates = new_templates_;
  s.key_range_imbalance = imbalance_;
  return s;
}

}  // namespace neardup::email
