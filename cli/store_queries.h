// What the commands that read a stopped run's store share (check, status, bench status): the
// store opened for reading only, and the error report.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cli/common_options.h"
#include "common/status.h"
#include "pipeline/placement.h"
#include "pipeline/shard_set.h"
#include "tier1/tier1.h"

namespace neardup::cli {

// Logs the error's message; returns `code` (the exit code: 1, or 2 for bad usage).
int ReportFailure(const Status& s, int code = 1);

// Reads signatures from a stopped pipeline's shards (for status queries outside a run); owns the
// placement and the shards it reads.
class StoreSignatures : public tier1::SignatureSource {
 public:
  StoreSignatures(std::unique_ptr<pipeline::Placement> placement, std::unique_ptr<pipeline::ShardSet> shards)
      : placement_(std::move(placement)), shards_(std::move(shards)), read_(*placement_, *shards_) {}
  StatusOr<pb::PageSignature> Fetch(const std::string& url, uint32_t cell) override { return read_.Fetch(url, cell); }
  const pipeline::ShardSet& shards() const { return *shards_; }
  uint32_t shard_count() const { return static_cast<uint32_t>(shards_->size()); }

 private:
  std::unique_ptr<pipeline::Placement> placement_;
  std::unique_ptr<pipeline::ShardSet> shards_;
  pipeline::ShardSetSignatures read_;
};

// Opens a stopped run's store for reading only (nothing in it changes): its group store, placement
// and shards, with the store's own parameters applied to *opts (a parameter given otherwise is
// refused). A move left unfinished: its shards hold the pages where its placement says (a split's
// pages may be in cells of its new map already).
struct ReadOnlyStore {
  uint64_t map_version = 0;  // the generation of the map the store serves
  std::unique_ptr<tier1::GroupStore> groups;
  std::unique_ptr<StoreSignatures> signatures;
};
StatusOr<ReadOnlyStore> OpenStoreForQueries(const std::string& dir, ResolvedOptions* opts);

}  // namespace neardup::cli
