// LocalShards: some or all of a store's P shards open in this process, each with the batch it has
// staged and not yet written. What the embedded pipeline (pipeline/shard_set.h's OpenLocalShardSet)
// and a Tier 2 server (cluster/tier2_server/tier2_service.h) hold, so that both open and drive
// their shards alike.
//
//   LocalShardsOptions o{.config = config, .store_dir = "/data/store", .shards = 4};
//   ASSIGN_OR_RETURN(auto shards, LocalShards::Open(o));
//   RETURN_IF_ERROR(shards->Stage(m, pages));
//   RETURN_IF_ERROR(shards->Apply(m, removed_urls, batch_number));
//
// Shard m lives in ShardDir(store_dir, m). A shard not opened here (not in `serve`) is refused by
// every call with FailedPrecondition, a shard number past P with InvalidArgument; the other errors
// are the shard's own (tier2/shard.h).
//
// Thread safety: as pipeline/shard_set.h's ShardSet: calls for different shards may run at once;
// for one shard, Compare, Get, GetMany, WillNeed and Stats at any time, the write steps (Stage,
// Drop, Publish, Apply, Commit) from one caller at a time. Pages handed to Stage are the caller's
// and must outlive the batch's Publish, Apply or Drop.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "proto/config.pb.h"
#include "proto/neardup.pb.h"
#include "tier2/shard.h"

namespace neardup::tier2 {

// Shard m's directory in a store: STORE_DIR/shard-NNN.
std::string ShardDir(const std::string& store_dir, uint32_t m);

struct LocalShardsOptions {
  pb::NeardupConfig config;  // tier2 and shingle sections (the store's parameters applied)
  std::string store_dir;     // shard m in ShardDir(store_dir, m)
  uint32_t shards = 0;       // P
  // Per shard, the prefix postings it is expected to hold (sizes its index; empty: a default).
  std::vector<uint64_t> expected_postings;
  std::string initial_order;  // ShardOptions::initial_order for every shard
  bool read_only = false;     // ShardOptions::read_only for every shard
  std::vector<uint32_t> serve;  // the shards to open here; empty: all P
};

class LocalShards {
 public:
  // Opens (or creates) the shards of options.serve, in parallel (each rebuilds its index from its
  // log). Errors: InvalidArgument for no shards or a shard to serve outside 0..P-1; Shard::Open's,
  // for the first shard that fails.
  static StatusOr<std::unique_ptr<LocalShards>> Open(const LocalShardsOptions& options);

  uint32_t size() const { return static_cast<uint32_t>(shards_.size()); }

  Status Compare(uint32_t shard, std::span<const ShardPage> pages, double threshold, const CompareOptions& compare,
                 CompareResult* out) const;
  // The write steps of one batch: Stage keeps the shard's staged batch; Publish and Apply (Publish
  // then CommitPublished) write it, and do nothing with nothing staged; Drop forgets it.
  Status Stage(uint32_t shard, std::span<const ShardPage> pages);
  void Drop(uint32_t shard);
  Status Publish(uint32_t shard, std::span<const std::string> removed, uint64_t batch);
  Status Apply(uint32_t shard, std::span<const std::string> removed, uint64_t batch);
  Status Commit(uint32_t shard);

  StatusOr<uint64_t> CommittedBatch(uint32_t shard) const;  // Shard::AppliedSequence
  // NotFound when the shard holds no signature for `url`.
  StatusOr<pb::PageSignature> Get(uint32_t shard, const std::string& url) const;
  // The signatures for `urls`, in order into *out (nullopt where the shard holds none). Errors:
  // Get's but NotFound.
  Status GetMany(uint32_t shard, std::span<const std::string> urls,
                 std::vector<std::optional<pb::PageSignature>>* out) const;
  void WillNeed(uint32_t shard, std::span<const std::string_view> urls) const;  // never fails
  ShardStats Stats(uint32_t shard) const;  // empty stats for a shard not open here

 private:
  explicit LocalShards(std::vector<std::unique_ptr<Shard>> shards)
      : shards_(std::move(shards)), staged_(shards_.size()) {}
  Status Check(uint32_t shard) const;

  std::vector<std::unique_ptr<Shard>> shards_;           // nullptr: not served here
  std::vector<std::unique_ptr<StagedBatch>> staged_;     // per shard, the batch staged and not yet written
};

}  // namespace neardup::tier2
