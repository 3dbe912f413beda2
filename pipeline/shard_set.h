// ShardSet: the P Tier 2 shards of a store, as the pipeline drives them. This is the seam a
// cluster implements over the network (a server holding one or several shards); LocalShardSet
// holds them in this process (tier2/shard.h).
//
// A batch reaches a shard in steps: Stage (its pages prepared; nothing visible or durable yet),
// Publish (visible to Compare and Get, with its removals; a restart would not find it), Commit
// (durable, tagged with its batch number, which CommittedBatch reports after a restart). Apply is
// Publish and Commit at once (a batch redone after a crash). Drop forgets a staged batch. Publish
// and Apply with nothing staged do nothing and succeed.
//
//   ASSIGN_OR_RETURN(auto shards, OpenLocalShardSet(options));
//   RETURN_IF_ERROR(shards->Compare(m, pages, 0.9, {}, &result));   // the pairs >= 0.9, exact
//   RETURN_IF_ERROR(shards->Stage(m, home_pages));
//   RETURN_IF_ERROR(shards->Publish(m, removed_urls, batch_number));
//   RETURN_IF_ERROR(shards->Commit(m));
//
// Thread safety: calls for different shards may run at once. For one shard, Compare, Get, Stats
// and CommittedBatch may run at any time, concurrently with each other and with the write steps;
// the write steps (Stage, Drop, Publish, Apply, Commit) come from one caller at a time. The set
// owns its shards; pages handed to Compare and Stage are the caller's and must outlive the call
// (Stage: until the batch is published, applied or dropped).
//
// Errors: what the shard returns (tier2/shard.h: InvalidArgument for a bad page, FailedPrecondition
// for a write out of order or on a read-only set, IoError/Corruption from its files), and
// InvalidArgument for a shard number out of range. A remote set adds its transport's errors.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "pipeline/store.h"
#include "proto/config.pb.h"
#include "proto/neardup.pb.h"
#include "tier1/tier1.h"
#include "tier2/shard.h"

namespace neardup::pipeline {

class ShardSet {
 public:
  virtual ~ShardSet() = default;
  virtual uint32_t size() const = 0;

  // Every pair of a batch page with a resident page or another batch page with Jaccard >= threshold;
  // under the shards' max_matches_per_page, what the groups need of them (tier2::Shard::
  // CompareBatch). `compare`: the URLs whose resident versions are stale, and a deadline (a remote
  // set's calls keep their own, its call timeout, which the server keeps inside the compare).
  virtual Status Compare(uint32_t shard, std::span<const tier2::ShardPage> pages, double threshold,
                         const tier2::CompareOptions& compare, tier2::CompareResult* out) const = 0;

  // The write steps of one batch (see above).
  virtual Status Stage(uint32_t shard, std::span<const tier2::ShardPage> pages) = 0;
  virtual void Drop(uint32_t shard) = 0;
  virtual Status Publish(uint32_t shard, std::span<const std::string> removed, uint64_t batch) = 0;
  virtual Status Apply(uint32_t shard, std::span<const std::string> removed, uint64_t batch) = 0;
  virtual Status Commit(uint32_t shard) = 0;

  // The number of the last batch the shard committed (0: none).
  virtual StatusOr<uint64_t> CommittedBatch(uint32_t shard) const = 0;
  // The signature the shard holds for `url`; NotFound when it holds none.
  virtual StatusOr<pb::PageSignature> Get(uint32_t shard, const std::string& url) const = 0;
  // The signatures the shard holds for `urls`, in order into *out (nullopt where it holds none),
  // in one call where the set can (a remote one: one round trip). The default asks Get for each.
  // Errors: Get's but NotFound.
  virtual Status GetMany(uint32_t shard, std::span<const std::string> urls,
                         std::vector<std::optional<pb::PageSignature>>* out) const;
  // Hints that Get will soon be asked for `urls` (tier2::Shard::WillNeed). Never fails; the
  // default does nothing.
  virtual void WillNeed(uint32_t /*shard*/, std::span<const std::string_view> /*urls*/) const {}
  virtual tier2::ShardStats Stats(uint32_t shard) const = 0;
};

class Placement;

// Tier 1's signatures (tier1::SignatureSource) from the shard that holds a page's home cell now
// (Placement::ShardOf: during a move, the one it serves). Neither the placement nor the set is
// owned. Fetch: NotFound for a cell outside the placement's map or a page the shard does not hold,
// else what ShardSet::Get returns. Thread safety: as ShardSet::Get.
class ShardSetSignatures : public tier1::SignatureSource {
 public:
  ShardSetSignatures(const Placement& placement, const ShardSet& shards) : placement_(placement), shards_(shards) {}
  StatusOr<pb::PageSignature> Fetch(const std::string& url, uint32_t home_cell) override;
  void WillFetch(std::span<const tier1::SignatureRef> refs) override;

 private:
  const Placement& placement_;
  const ShardSet& shards_;
};

// What opening a store's shard set needs, wherever its shards live.
struct ShardSetOptions {
  StoreLayout layout;           // shard m lives in layout.shard(m)
  pb::NeardupConfig config;     // tier2 and shingle sections (the store's parameters applied)
  uint32_t shards = 0;          // P
  // Per shard, the prefix postings it is expected to hold (sizes its index; empty: a default).
  std::vector<uint64_t> expected_postings;
  // tier2::ShardOptions::initial_order for every shard (a set whose shards live in other
  // processes may ignore it: it changes no answer).
  std::string initial_order;
  bool read_only = false;       // tier2::ShardOptions::read_only for every shard
  // The shards to open in this process (a Tier 2 server holds some of a store's); empty: all P.
  std::vector<uint32_t> serve;
};

// Opens (or creates) the P shards of a store in this process (or those of options.serve), in
// parallel (each rebuilds its index from its log). A shard not opened here is refused by every
// call with FailedPrecondition. Errors: InvalidArgument for a shard to serve outside 0..P-1;
// tier2::Shard::Open's, for the first shard that fails.
StatusOr<std::unique_ptr<ShardSet>> OpenLocalShardSet(const ShardSetOptions& options);

// How a pipeline reaches its shards (PipelineOptions::open_shards): OpenLocalShardSet, or a set
// whose shards live in other processes. It must return options.shards shards.
using ShardSetOpener = std::function<StatusOr<std::unique_ptr<ShardSet>>(const ShardSetOptions& options)>;

}  // namespace neardup::pipeline
