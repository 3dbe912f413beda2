// A neardup store: where its files are, the parameters its contents depend on, and how the inputs
// it consumed are recognised.
//
// Layout (StoreLayout): DIR/tier1/ (the group store, LevelDB), DIR/map.pb (the partition map),
// DIR/shard-NNN/ (Tier 2 shard m's signature log). The pipeline and every command that opens a
// store take the names from here.
//
// Parameters (pb::StoreParams, meta row "params" of the group store): written once, durably, in
// the store's first commit, before any page is kept (and the map file before them). From then on
// they rule: every command that opens the store uses them, and a value given explicitly (a flag, or
// a field set in a configuration file) that disagrees is refused, naming the parameter, the
// store's value and where the other came from. Defaults never disagree: they yield to the store.
//
// Inputs (pb::InputIdentity): an input file is known by its content (the bytes consumed and their
// XXH3-128), not its path. A run continues the store's interrupted input when the file begins with
// the bytes committed of it; says so when the file is an input consumed whole before; otherwise
// the file is the next crawl, added to what the store holds.
//
// Thread safety: pure functions and value types.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "document/signature.h"
#include "partitioner/partition_map.h"
#include "proto/config.pb.h"
#include "proto/tier1.pb.h"
#include "tier1/group_store.h"

namespace neardup::pipeline {


struct StoreLayout {
  std::string dir;
  std::string tier1() const { return dir + "/tier1"; }
  std::string map() const { return dir + "/map.pb"; }
  std::string shard(uint32_t m) const;  // DIR/shard-NNN
};

// Where each store parameter was given explicitly, by parameter name ("threshold", "shingle_k",
// "dims", "routing", "rho", "shards", "min_threshold", "prefix_overlap"), e.g.
// {"threshold", "--threshold 0.8"} or {"routing", "configs/x.textproto pipeline.routing"}.
using GivenParams = std::map<std::string, std::string>;

// The parameters a run would record, from its configuration (defaults filled) and threshold.
pb::StoreParams ParamsFromConfig(const pb::NeardupConfig& config, double threshold);

// Every explicitly given parameter agrees with the store's: else FailedPrecondition naming the
// first that does not, both values and where the other came from.
Status CheckGivenParams(const pb::StoreParams& stored, const pb::StoreParams& requested, const GivenParams& given,
                        const std::string& store);

// The store's parameters written into a configuration, threshold and signer options, so that a
// command opening the store computes what the store's contents were computed with.
void ApplyParams(const pb::StoreParams& p, pb::NeardupConfig* config, double* threshold, SignerOptions* signer);

// The map was built for these parameters (threshold, k, dims, routing, rho): else
// FailedPrecondition naming `what` (the map's file), the parameter and both values.
Status CheckMapFits(const partitioner::PartitionMap& map, const pb::StoreParams& p, const std::string& what);

// XXH3-64 of the map's serialized bytes (deterministic serialization).
uint64_t MapDigest(const partitioner::PartitionMap& map);

// Reads the store's parameters. NotFound when the store has none (nothing was ever committed).
StatusOr<pb::StoreParams> ReadStoreParams(const tier1::GroupStore& store);
// Writes them (meta row "params") and waits until they are durable.
Status WriteStoreParams(tier1::GroupStore* store, const pb::StoreParams& p);

// The XXH3-128 of a file's first `bytes` bytes, computed as a reader passes over it: Advance(to)
// reads and hashes the bytes from where it stands up to `to` through its own descriptor.
class PrefixDigest {
 public:
  // IoError when the file cannot be opened.
  static StatusOr<std::unique_ptr<PrefixDigest>> Open(const std::string& path);
  ~PrefixDigest();
  PrefixDigest(const PrefixDigest&) = delete;
  PrefixDigest& operator=(const PrefixDigest&) = delete;
  // Hashes up to byte `to` (>= where it stands). IoError when the file ends before it.
  Status Advance(uint64_t to);
  uint64_t position() const { return position_; }
  // The digest of bytes [0, position()).
  void Get(uint64_t* lo, uint64_t* hi) const;

 private:
  PrefixDigest(int fd, std::string path);
  int fd_;
  std::string path_;
  uint64_t position_ = 0;
  void* state_;  // XXH3_state_t
};

}  // namespace neardup::pipeline
