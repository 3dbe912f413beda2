#include "email/templates/annotator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "common/json_write.h"
#include "common/rfc3339.h"

namespace neardup::email {

StatusOr<std::shared_ptr<const TemplateSnapshot>> TemplateSnapshot::Build(const ClusterStore& store, uint32_t k,
                                                                         int64_t now_ms) {
  auto s = std::make_shared<TemplateSnapshot>();
  s->built_ms_ = now_ms;
  RETURN_IF_ERROR(store.ScanTemplates([&](uint64_t, const pb::EmailTemplate& t) {
    if (t.recipients() >= k) s->all_.push_back(t);
    return true;
  }));
  for (const auto& t : s->all_) {
    s->by_row_[t.row()].push_back(&t);
    auto [it, inserted] = s->by_id_.emplace(t.id(), &t);
    if (!inserted && t.emails() > it->second->emails()) it->second = &t;
  }
  return std::shared_ptr<const TemplateSnapshot>(std::move(s));
}

std::span<const pb::EmailTemplate* const> TemplateSnapshot::Row(uint64_t key) const {
  auto it = by_row_.find(key);
  if (it == by_row_.end()) return {};
  return it->second;
}

const pb::EmailTemplate* TemplateSnapshot::Find(uint64_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

std::vector<const pb::EmailTemplate*> TemplateSnapshot::Unique() const {
  std::vector<const pb::EmailTemplate*> out;
  for (const auto& [id, t] : by_id_) out.push_back(t);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->id() < b->id(); });
  return out;
}

std::vector<uint64_t> TemplateSnapshot::RowsOf(uint64_t id) const {
  std::vector<uint64_t> rows;
  for (const auto& t : all_) {
    if (t.id() == id) rows.push_back(t.row());
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

Annotator::Annotator(Inducer* inducer, bool forward, uint64_t refresh_ms)
    : inducer_(inducer), forward_(forward), refresh_ms_(refresh_ms) {}

Annotator::~Annotator() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (refresher_.joinable()) refresher_.join();
}

Status Annotator::RefreshEvery(uint64_t period_ms) {
  if (refresher_.joinable()) return FailedPrecondition("annotator: RefreshEvery was called already");
  RETURN_IF_ERROR(Refresh());
  background_ = true;
  refresher_ = std::thread([this, period = std::chrono::milliseconds(std::max<uint64_t>(period_ms, 1))] {
    std::unique_lock<std::mutex> lock(stop_mu_);
    while (!stop_cv_.wait_for(lock, period, [this] { return stopping_; })) {
      lock.unlock();
      if (Status s = Refresh(); !s.ok()) {
        ++failed_refreshes_;
        spdlog::warn("email: template snapshot not refreshed (the previous one is kept): {}", s.message());
      }
      lock.lock();
    }
  });
  return Status::Ok();
}

std::shared_ptr<const TemplateSnapshot> Annotator::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snapshot_;
}

Status Annotator::Refresh() {
  std::lock_guard<std::mutex> rl(refresh_mu_);
  const int64_t now = inducer_->store()->options().clock != nullptr ? inducer_->store()->options().clock->NowMillis()
                                                                    : SystemClock()->NowMillis();
  ASSIGN_OR_RETURN(auto s, TemplateSnapshot::Build(*inducer_->store(), inducer_->formation().k, now));
  std::lock_guard<std::mutex> lock(mu_);
  snapshot_ = std::move(s);
  ++refreshes_;
  return Status::Ok();
}

Status Annotator::MaybeRefresh() {
  auto s = snapshot();
  if (s != nullptr && background_.load()) return Status::Ok();  // the refresh thread keeps it fresh
  const Clock* clock = inducer_->store()->options().clock != nullptr ? inducer_->store()->options().clock : SystemClock();
  if (s != nullptr && clock->NowMillis() - s->built_ms() < static_cast<int64_t>(refresh_ms_)) return Status::Ok();
  return Refresh();
}

Annotation Annotator::AnnotatePrepared(const PreparedEmail& email) {
  Annotation a;
  auto snap = snapshot();
  if (snap == nullptr) return a;
  std::vector<const pb::EmailTemplate*> candidates;
  for (uint64_t key : email.keys) {
    for (const pb::EmailTemplate* t : snap->Row(key)) candidates.push_back(t);
  }
  const auto& sh = email.stored.shingles();
  const pb::EmailTemplate* t =
      MatchTemplate(candidates, std::span<const uint64_t>(sh.data(), static_cast<size_t>(sh.size())), inducer_->formation());
  if (t == nullptr) return a;
  a.template_id = t->id();
  for (const auto& u : inducer_->udcas()) {
    for (const auto& ann : t->annotations()) {
      if (ann.udca() != u->name()) continue;
      std::string v = u->Apply(ann.json(), email.stored);
      if (!v.empty()) a.values.emplace_back(std::string(u->name()), std::move(v));
    }
  }
  return a;
}

StatusOr<Annotation> Annotator::Annotate(const EmailRecord& record) {
  RETURN_IF_ERROR(MaybeRefresh());
  thread_local std::unique_ptr<FeatureExtractor> extractor;
  if (extractor == nullptr) {
    ASSIGN_OR_RETURN(extractor, FeatureExtractor::Create(inducer_->shingle_k()));
  }
  PreparedEmail p;
  RETURN_IF_ERROR(inducer_->Prepare(record, extractor.get(), &p));
  Annotation a = AnnotatePrepared(p);
  if (forward_) inducer_->OfferPrepared(std::move(p));  // fire-and-forget: never waits
  return a;
}

std::string AnnotationJson(std::string_view email_id, const Annotation& a) {
  std::string out = "{\"id\":";
  AppendJsonString(&out, email_id);
  out += ",\"template\":";
  if (a.template_id) {
    out += '"';
    out += HexId(*a.template_id);
    out += '"';
  } else {
    out += "null";
  }
  out += ",\"annotations\":{";
  for (size_t i = 0; i < a.values.size(); ++i) {
    if (i > 0) out += ',';
    AppendJsonString(&out, a.values[i].first);
    out += ':' + a.values[i].second;
  }
  return out + "}}";
}

std::string HexId(uint64_t id) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(id));
  return buf;
}

std::string TemplateJson(const pb::EmailTemplate& t, const std::vector<uint64_t>& rows) {
  std::string out = "{\"id\":\"" + HexId(t.id()) + "\",\"rows\":[";
  for (size_t i = 0; i < rows.size(); ++i) out += (i ? ",\"" : "\"") + HexId(rows[i]) + "\"";
  out += "],\"emails\":" + std::to_string(t.emails()) + ",\"recipients\":" + std::to_string(t.recipients());
  out += ",\"created_at\":\"";
  AppendRfc3339(&out, t.created_ms() / 1000);
  out += "\",\"first_email_at\":";
  if (t.first_email_ms() > 0) {
    out += '"';
    AppendRfc3339(&out, t.first_email_ms() / 1000);
    out += '"';
  } else {
    out += "null";
  }
  out += ",\"subject_pattern\":";
  AppendJsonString(&out, t.subject_pattern());
  out += ",\"fixed_shingles\":" + std::to_string(t.core_size()) + ",\"annotations\":{";
  for (int i = 0; i < t.annotations_size(); ++i) {
    if (i > 0) out += ',';
    AppendJsonString(&out, t.annotations(i).udca());
    out += ':' + t.annotations(i).json();
  }
  return out + "}}";
}

}  // namespace neardup::email
