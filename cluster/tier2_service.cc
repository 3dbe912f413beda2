#include "cluster/tier2_service.h"

#include <chrono>
#include <mutex>

#include <spdlog/spdlog.h>

#include "common/config.h"

namespace neardup::cluster {
namespace {

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void SetStatus(const Status& s, pb::Tier2Response* r) {
  r->set_code(static_cast<uint32_t>(s.code()));
  r->set_message(s.message());
}

}  // namespace

std::vector<tier2::ShardPage> PagesOf(const google::protobuf::RepeatedPtrField<pb::ShardPageMsg>& m) {
  std::vector<tier2::ShardPage> pages;
  pages.reserve(static_cast<size_t>(m.size()));
  for (const pb::ShardPageMsg& p : m) {
    tier2::ShardPage page;
    page.signature = &p.signature();
    page.home = p.home();
    page.join_only = p.join_only();
    pages.push_back(page);  // not `validated`: the server checks what arrives
  }
  return pages;
}

void ToMessage(std::span<const tier2::ShardPage> pages, google::protobuf::RepeatedPtrField<pb::ShardPageMsg>* out) {
  out->Reserve(static_cast<int>(pages.size()));
  for (const tier2::ShardPage& p : pages) {
    pb::ShardPageMsg* m = out->Add();
    *m->mutable_signature() = *p.signature;
    m->set_home(p.home);
    m->set_join_only(p.join_only);
  }
}

void ToMessage(const tier2::CompareResult& r, pb::CompareResponse* out) {
  for (const auto& m : r.resident) {
    pb::ResidentMatchMsg* x = out->add_resident();
    x->set_page(m.page);
    x->set_url(m.url);
    x->set_similarity(m.similarity);
  }
  for (const auto& m : r.in_batch) {
    pb::BatchMatchMsg* x = out->add_in_batch();
    x->set_a(m.a);
    x->set_b(m.b);
    x->set_similarity(m.similarity);
  }
  out->mutable_superseded()->Add(r.superseded.begin(), r.superseded.end());
  out->mutable_empty()->Add(r.empty.begin(), r.empty.end());
  pb::CompareStatsMsg* s = out->mutable_stats();
  s->set_pages(r.stats.pages);
  s->set_postings_scanned(r.stats.postings_scanned);
  s->set_candidates(r.stats.candidates);
  s->set_positional_passed(r.stats.positional_passed);
  s->set_verifications(r.stats.verifications);
  s->set_resident_pairs(r.stats.resident_pairs);
  s->set_batch_candidates(r.stats.batch_candidates);
  s->set_batch_merged(r.stats.batch_merged);
  s->set_batch_pairs(r.stats.batch_pairs);
  s->set_fetched_bytes(r.stats.fetched_bytes);
  s->set_copies(r.stats.copies);
  s->set_capped_pages(r.stats.capped_pages);
  s->set_batch_connected(r.stats.batch_connected);
}

Status FromMessage(const pb::CompareResponse& m, size_t batch_pages, tier2::CompareResult* out) {
  *out = tier2::CompareResult{};
  auto bad = [&](const std::string& what) {
    *out = tier2::CompareResult{};
    return Corruption("tier2: a comparison's answer " + what + " (a batch of " + std::to_string(batch_pages) +
                      " pages)");
  };
  auto similarity_ok = [](double s) { return s >= 0 && s <= 1; };  // NaN fails both
  for (const auto& x : m.resident()) {
    if (x.page() >= batch_pages) return bad("names page " + std::to_string(x.page()));
    if (!similarity_ok(x.similarity())) return bad("gives a similarity of " + std::to_string(x.similarity()));
  }
  for (const auto& x : m.in_batch()) {
    if (x.a() >= x.b() || x.b() >= batch_pages) {
      return bad("pairs pages " + std::to_string(x.a()) + " and " + std::to_string(x.b()));
    }
    if (!similarity_ok(x.similarity())) return bad("gives a similarity of " + std::to_string(x.similarity()));
  }
  for (const uint32_t i : m.superseded()) {
    if (i >= batch_pages) return bad("names superseded page " + std::to_string(i));
  }
  for (const uint32_t i : m.empty()) {
    if (i >= batch_pages) return bad("names empty page " + std::to_string(i));
  }
  for (const auto& x : m.resident()) out->resident.push_back({x.page(), x.url(), x.similarity()});
  for (const auto& x : m.in_batch()) out->in_batch.push_back({x.a(), x.b(), x.similarity()});
  out->superseded.assign(m.superseded().begin(), m.superseded().end());
  out->empty.assign(m.empty().begin(), m.empty().end());
  const pb::CompareStatsMsg& s = m.stats();
  out->stats = {.pages = s.pages(),
                .copies = s.copies(),
                .capped_pages = s.capped_pages(),
                .postings_scanned = s.postings_scanned(),
                .candidates = s.candidates(),
                .positional_passed = s.positional_passed(),
                .verifications = s.verifications(),
                .resident_pairs = s.resident_pairs(),
                .batch_candidates = s.batch_candidates(),
                .batch_merged = s.batch_merged(),
                .batch_connected = s.batch_connected(),
                .batch_pairs = s.batch_pairs(),
                .fetched_bytes = s.fetched_bytes()};
  return Status::Ok();
}

void ToMessage(const tier2::ShardStats& s, pb::ShardStatsMsg* out) {
  out->set_resident_pages(s.resident_pages);
  out->set_index_postings(s.index_postings);
  out->set_index_bytes(s.index_bytes);
  out->set_index_buckets(s.index_buckets);
  out->set_page_table_bytes(s.page_table_bytes);
  out->set_compactions(s.compactions);
  out->set_rebuilds(s.rebuilds);
  out->set_token_order_bits(s.token_order_bits);
  out->set_frequent_tokens(s.frequent_tokens);
  out->set_log_bytes(s.log_bytes);
  out->set_log_live_bytes(s.log_live_bytes);
  out->set_log_compactions(s.log_compactions);
  out->set_open_seconds(s.open_seconds);
  out->set_order_refreshes(s.order_refreshes);
  out->set_refreshed_pages(s.refreshed_pages);
}

tier2::ShardStats FromMessage(const pb::ShardStatsMsg& m) {
  tier2::ShardStats s;
  s.resident_pages = m.resident_pages();
  s.index_postings = m.index_postings();
  s.index_bytes = m.index_bytes();
  s.index_buckets = m.index_buckets();
  s.page_table_bytes = m.page_table_bytes();
  s.compactions = m.compactions();
  s.rebuilds = m.rebuilds();
  s.token_order_bits = m.token_order_bits();
  s.frequent_tokens = m.frequent_tokens();
  s.log_bytes = m.log_bytes();
  s.log_live_bytes = m.log_live_bytes();
  s.log_compactions = m.log_compactions();
  s.open_seconds = m.open_seconds();
  s.order_refreshes = m.order_refreshes();
  s.refreshed_pages = m.refreshed_pages();
  return s;
}

namespace {

// An OpenShards request within what a store can be: its shard count in pipeline.shards' range, and
// the shards to serve (and expected postings) among them, each once.
Status CheckOpenRequest(const pb::OpenShardsRequest& o) {
  if (auto rule = ConfigRangeError("pipeline.shards", o.shards()); !rule.empty()) {
    return InvalidArgument("tier2: OpenShards for " + std::to_string(o.shards()) + " shards: " + rule);
  }
  if (static_cast<uint64_t>(o.expected_postings_size()) > o.shards()) {
    return InvalidArgument("tier2: OpenShards with " + std::to_string(o.expected_postings_size()) +
                           " expected postings for " + std::to_string(o.shards()) + " shards");
  }
  if (static_cast<uint64_t>(o.serve_size()) > o.shards()) {
    return InvalidArgument("tier2: OpenShards serving " + std::to_string(o.serve_size()) + " shards of " +
                           std::to_string(o.shards()));
  }
  std::vector<bool> seen(o.shards(), false);
  for (const uint32_t m : o.serve()) {
    if (m >= o.shards() || seen[m]) {
      return InvalidArgument("tier2: OpenShards serves shard " + std::to_string(m) +
                             (m >= o.shards() ? " of " + std::to_string(o.shards()) : std::string(" twice")));
    }
    seen[m] = true;
  }
  return Status::Ok();
}

}  // namespace

pb::Tier2Response Tier2Service::Open(const pb::Tier2Request& request) {
  pb::Tier2Response r;
  r.set_id(request.id());
  const pb::OpenShardsRequest& o = request.open();
  // Checked before the running shards are closed: a bad request changes nothing.
  if (Status bad = CheckOpenRequest(o); !bad.ok()) {
    spdlog::warn("{}; the shards open stay open", bad.message());
    SetStatus(bad, &r);
    return r;
  }
  pipeline::ShardSetOptions so;
  so.layout.dir = store_dir_;
  so.config = o.config();
  so.shards = o.shards();
  so.expected_postings.assign(o.expected_postings().begin(), o.expected_postings().end());
  so.read_only = o.read_only();
  so.serve.assign(o.serve().begin(), o.serve().end());
  std::unique_lock lock(mu_);
  {
    std::lock_guard staged(staged_mu_);
    staged_.clear();
  }
  shards_.reset();  // a store's shards are open in one set at a time (their locks)
  auto opened = pipeline::OpenLocalShardSet(so);
  if (!opened.ok()) {
    spdlog::error("tier2: cannot open the store's shards: {}", opened.status().ToString());
    SetStatus(opened.status(), &r);
    return r;
  }
  shards_ = std::move(*opened);
  serving_ = so.serve;
  r.mutable_open()->mutable_shards()->Add(serving_.begin(), serving_.end());
  return r;
}

namespace {

bool PastDeadline(const pb::Tier2Request& request, pb::Tier2Response* r) {
  if (request.deadline_unix_ms() == 0 || NowUnixMs() <= request.deadline_unix_ms()) return false;
  r->set_id(request.id());
  SetStatus(DeadlineExceeded("tier2: the request's deadline passed before it was served"), r);
  return true;
}

}  // namespace

pb::Tier2Response Tier2Service::Handle(pb::Tier2Request request) {
  pb::Tier2Response r;
  if (PastDeadline(request, &r)) return r;
  if (request.body_case() == pb::Tier2Request::kOpen) return Open(request);
  std::shared_lock lock(mu_);
  return HandleLocked(std::move(request));
}

std::optional<pb::Tier2Response> Tier2Service::TryHandleRead(pb::Tier2Request& request) {
  switch (request.body_case()) {
    case pb::Tier2Request::kGet:
    case pb::Tier2Request::kGetMany:
    case pb::Tier2Request::kStats:
    case pb::Tier2Request::kCommittedBatch:
      break;
    default:
      return std::nullopt;
  }
  pb::Tier2Response r;
  if (PastDeadline(request, &r)) return r;
  std::shared_lock lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) return std::nullopt;  // an open in progress
  return HandleLocked(std::move(request));
}

pb::Tier2Response Tier2Service::HandleLocked(pb::Tier2Request request) {
  pb::Tier2Response r;
  r.set_id(request.id());
  if (shards_ == nullptr) {
    SetStatus(FailedPrecondition("tier2: no shards open (OpenShards first)"), &r);
    return r;
  }
  const uint32_t m = request.shard();
  Status s;
  switch (request.body_case()) {
    case pb::Tier2Request::kCompare: {
      tier2::CompareResult result;
      const std::vector<tier2::ShardPage> pages = PagesOf(request.compare().pages());
      tier2::CompareOptions compare;
      compare.stale_url_hashes = {request.compare().stale_url_hashes().data(),
                                  static_cast<size_t>(request.compare().stale_url_hashes_size())};
      // The caller gives up at the deadline: the compare stops there too, and frees what it held,
      // instead of working on for nobody (and for the retries that follow it).
      if (request.deadline_unix_ms() != 0) {
        compare.deadline = std::chrono::steady_clock::now() +
                           std::chrono::milliseconds(request.deadline_unix_ms() - NowUnixMs());
      }
      s = shards_->Compare(m, pages, request.compare().threshold(), compare, &result);
      if (s.ok()) ToMessage(result, r.mutable_compare());
      break;
    }
    case pb::Tier2Request::kStage: {
      // The staged pages must live until the batch is published, applied or dropped.
      auto held = std::make_shared<pb::Tier2Request>(std::move(request));
      const std::vector<tier2::ShardPage> pages = PagesOf(held->stage().pages());
      s = shards_->Stage(m, pages);
      std::lock_guard staged(staged_mu_);
      if (s.ok()) staged_[m] = std::move(held);
      else staged_.erase(m);
      break;
    }
    case pb::Tier2Request::kDrop: {
      shards_->Drop(m);
      std::lock_guard staged(staged_mu_);
      staged_.erase(m);
      break;
    }
    case pb::Tier2Request::kPublish:
    case pb::Tier2Request::kApply: {
      const pb::WriteRequest& w =
          request.body_case() == pb::Tier2Request::kPublish ? request.publish() : request.apply();
      const std::vector<std::string> removed(w.removed().begin(), w.removed().end());
      s = request.body_case() == pb::Tier2Request::kPublish ? shards_->Publish(m, removed, w.batch())
                                                            : shards_->Apply(m, removed, w.batch());
      std::lock_guard staged(staged_mu_);
      staged_.erase(m);
      break;
    }
    case pb::Tier2Request::kCommit:
      s = shards_->Commit(m);
      break;
    case pb::Tier2Request::kCommittedBatch: {
      auto batch = shards_->CommittedBatch(m);
      s = batch.status();
      if (s.ok()) r.set_committed_batch(*batch);
      break;
    }
    case pb::Tier2Request::kGet: {
      auto sig = shards_->Get(m, request.get());
      s = sig.status();
      if (s.ok()) *r.mutable_signature() = std::move(*sig);
      break;
    }
    case pb::Tier2Request::kGetMany: {
      const std::vector<std::string> urls(request.get_many().urls().begin(), request.get_many().urls().end());
      std::vector<std::optional<pb::PageSignature>> sigs;
      s = shards_->GetMany(m, urls, &sigs);
      if (s.ok()) {
        pb::GetManyResponse* g = r.mutable_get_many();
        for (auto& sig : sigs) {
          if (sig.has_value()) *g->add_signatures() = std::move(*sig);
          else g->add_signatures();
          g->add_found(sig.has_value());
        }
      }
      break;
    }
    case pb::Tier2Request::kStats:
      ToMessage(shards_->Stats(m), r.mutable_stats());
      break;
    default:
      s = InvalidArgument("tier2: a request without a body");
  }
  SetStatus(s, &r);
  return r;
}

}  // namespace neardup::cluster
