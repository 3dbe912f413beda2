#include "cluster/tier2_server/tier2_service.h"

#include <chrono>
#include <mutex>

#include <spdlog/spdlog.h>

#include "cluster/tier2_server/tier2_messages.h"
#include "common/config.h"

namespace neardup::cluster {
namespace {

void SetStatus(const Status& s, pb::Tier2Response* r) {
  r->set_code(static_cast<uint32_t>(s.code()));
  r->set_message(s.message());
}

}  // namespace

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
  tier2::LocalShardsOptions so;
  so.store_dir = store_dir_;
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
  auto opened = tier2::LocalShards::Open(so);
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

bool PastDeadline(const pb::Tier2Request& request, const neardup::Clock& clock, pb::Tier2Response* r) {
  if (request.deadline_unix_ms() == 0 || clock.NowMillis() <= request.deadline_unix_ms()) return false;
  r->set_id(request.id());
  SetStatus(DeadlineExceeded("tier2: the request's deadline passed before it was served"), r);
  return true;
}

}  // namespace

pb::Tier2Response Tier2Service::Handle(pb::Tier2Request request) {
  pb::Tier2Response r;
  if (PastDeadline(request, *clock_, &r)) return r;
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
  if (PastDeadline(request, *clock_, &r)) return r;
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
                           std::chrono::milliseconds(request.deadline_unix_ms() - clock_->NowMillis());
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
