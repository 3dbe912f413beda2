// Tier2Service: what a Tier 2 server does with a request, apart from the network: it opens the
// shards it serves for a store (an OpenShards request names them and carries the store's
// parameters) and answers each step of pipeline/shard_set.h on them (tier2/local_shards.h).
//
//   Tier2Service service("/data/tier2-a");
//   pb::Tier2Response r = service.Handle(request);   // r.code() == 0: done
//
// Errors travel in the response: code (common/status.h's StatusCode) and message, the shard's own
// or FailedPrecondition before an OpenShards, InvalidArgument for a shard not served here or a
// request without a body, and DeadlineExceeded when the request's deadline has passed before the
// work starts (the work is then not done), or, for a compare, while it runs: the shard checks the
// deadline inside the compare and stops there, dropping what it found (tier2::CompareOptions).
//
// Thread safety: Handle may be called from any thread, for different shards at once; for one
// shard as ShardSet allows (reads at any time, the write steps one at a time). OpenShards waits
// for the calls in flight and replaces the set.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "proto/cluster.pb.h"
#include "common/clock.h"
#include "tier2/local_shards.h"

namespace neardup::cluster {

class Tier2Service {
 public:
  // `store_dir`: where this server keeps its shards (shard m in StoreLayout{store_dir}.shard(m)).
  // `clock` (not owned, outlives this): the time a request's deadline (Unix milliseconds) is
  // measured against.
  explicit Tier2Service(std::string store_dir, const neardup::Clock* clock = SystemClock())
      : store_dir_(std::move(store_dir)), clock_(clock) {}

  pb::Tier2Response Handle(pb::Tier2Request request);
  // A read that answers at once (get, get many, stats, committed batch), for a network thread to
  // serve without a trip to the work pool: its response, or nullopt for any other request, or
  // while an OpenShards holds the set (the request is then still the caller's, for Handle).
  std::optional<pb::Tier2Response> TryHandleRead(pb::Tier2Request& request);

 private:
  pb::Tier2Response HandleLocked(pb::Tier2Request request);  // mu_ held shared
  pb::Tier2Response Open(const pb::Tier2Request& request);

  const std::string store_dir_;
  const neardup::Clock* const clock_;
  std::shared_mutex mu_;                        // Handle shared, OpenShards exclusive
  std::unique_ptr<tier2::LocalShards> shards_;  // guarded by mu_
  std::vector<uint32_t> serving_;               // guarded by mu_
  // Per shard, the Stage request whose pages its staged batch refers to.
  std::mutex staged_mu_;
  std::map<uint32_t, std::shared_ptr<pb::Tier2Request>> staged_;  // guarded by staged_mu_
};

}  // namespace neardup::cluster
