// ShardHealth: each Tier 2 shard's state as the Tier 1 server last saw it (up or down, the pages
// it holds, its calls and failures, when it last answered), for /metrics. The batch loop's shard
// sets feed it as they work: Observe() wraps the opener the loop opens them with, and every call
// of the wrapped set is recorded. A scrape reads the board only, so it never waits for a shard,
// even one that has gone quiet.
//
//   ShardHealth health(servers);            // servers: shard m on servers[m % N]; none: in process
//   run.open_shards = health.Observe(run.open_shards);
//   health.Snapshot();                      // /metrics
//
// What "up" means: the shard's last call (or its set's open) succeeded. The pages a shard holds are
// asked of it (ShardSet::Stats, one small call) when its set opens and after each of its commits:
// on the batch loop's threads, never on a scrape's.
//
// Thread safety: every method may be called from any thread; the wrapped set is as thread-safe as
// the set it wraps.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "pipeline/shard_set.h"

namespace neardup::cluster {

struct ShardState {
  uint32_t shard = 0;
  std::string server;             // host:port of its Tier 2 server; empty: in this process
  bool up = false;                // its last call succeeded
  uint64_t resident_pages = 0;    // as it last said
  uint64_t calls = 0, failures = 0;
  double last_success_unix = 0;   // seconds since the epoch of its last successful call (0: none)
  std::string last_error;         // of its last failed call
};

class ShardHealth {
 public:
  // `servers` as RemoteShardSetOptions::servers (empty: the shards live in this process).
  // `clock` (not owned, outlives this): when a call succeeded (last_success_unix).
  explicit ShardHealth(std::vector<std::string> servers, const neardup::Clock* clock = SystemClock());

  // Records a call's outcome for `shard` (the board grows to hold it).
  void Record(uint32_t shard, const Status& status);
  // Records a successful call (the open) for each of the `shards` of a set just opened, in one
  // step: a Snapshot sees every shard of the set or none of them.
  void Opened(uint32_t shards);
  void SetResident(uint32_t shard, uint64_t pages);
  // As ShardSet::Stats answers: all zeros is what a shard that did not answer returns, so it does
  // not replace pages the shard said it held.
  void SetResidentFrom(uint32_t shard, const tier2::ShardStats& stats);
  // The shards seen so far, by number (none before the first set opened).
  std::vector<ShardState> Snapshot() const;
  // After a rebalance: the shards are `shards`, on `servers` (as RemoteShardSetOptions::servers);
  // those past the count are forgotten, the others keep their counts under their server's name.
  void Reset(std::vector<std::string> servers, uint32_t shards);

  // An opener whose sets are `inner`'s, wrapped to record every call here. The board must
  // outlive the sets.
  pipeline::ShardSetOpener Observe(pipeline::ShardSetOpener inner);

 private:
  ShardState& At(uint32_t shard);  // mu_ held

  const neardup::Clock* const clock_;
  mutable std::mutex mu_;
  std::vector<std::string> servers_;  // guarded by mu_
  std::vector<ShardState> shards_;  // guarded by mu_
};

// max / mean of the shards' resident pages (1: balanced; 0 when they hold none).
double ResidentImbalance(const std::vector<ShardState>& shards);

}  // namespace neardup::cluster
