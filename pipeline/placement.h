// Placement: where a store's pages are. The one object that says which partition map a store
// serves (or, while cells move between shards, the maps before and after the move and whether it
// has flipped), the served map's generation, which shard holds a cell's pages and which shards a
// page is routed to, where a batch stores and removes a page while a move is open, and which Tier
// 2 server holds each shard. The batch loop, the move (pipeline/store_move.h), Tier 1's signature
// reads (ShardSetSignatures), a Tier 1 server's probe and status answers, `neardup check`,
// `neardup status` and the rebalances ask it; nothing else works out a served map.
//
// Its state lives behind PlacementState, a small interface of map files and meta rows:
//   map.pb (MapFile::kServed)      the map the store serves (the new one from a move's rename on);
//   map-next.pb (MapFile::kNext)   a move's new map, from its start to its rename;
//   map-prev.pb (MapFile::kPrev)   a move's old map, from its start to its end;
//   meta row "params"              the store's parameters (pipeline/store.h), which name the served
//                                  map by generation, digest and shard count;
//   meta row "move"                the move journal (pb::MoveJournal), while a move is open;
//   meta row "tier2_servers"       the Tier 2 servers of the shards (ShardServers).
// StorePlacementState keeps them in a store's directory and group store; MemoryPlacementState
// keeps them in memory, for tests. OpenStoreReadOnly opens a store's group store and placement
// for the commands that only read a store (status, check, --out).
//
// The maps of a move: cells are the new map's throughout (they are the old map's, or refine them:
// partitioner::SplitCells); a cell's old shard is its parent cell's under the old map. Until the
// flip the old map is served: every page is on its old shard, and routing goes by the old map;
// from the flip on, the new one. The rules a batch follows meanwhile (where it stores, removes and
// compares) are pipeline/store_move.h's, and are answered here (StoreShards, RemovalShards,
// ClearsOldShard, Route).
//
// Thread safety: the maps, the journal's fields a move does not change, and generation() are set
// at Load and read from any thread. flipped() and done() change once each (Flip, End) and may be
// read from any thread meanwhile: a reader that asked ShardOf just before the flip may read the
// old shard's version of a page once more. Flip, Rename, End and CountMoved are called by one
// thread (the move's), as are journal() reads of the counts they change.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "partitioner/partition_map.h"
#include "pipeline/store.h"
#include "proto/tier1.pb.h"
#include "tier1/group_store.h"

namespace neardup::pipeline {

enum class MapFile { kServed, kNext, kPrev };  // map.pb, map-next.pb, map-prev.pb

// A store's placement state: its map files and meta rows. Implementations are thread-safe for
// concurrent reads; writes come from one thread.
class PlacementState {
 public:
  virtual ~PlacementState() = default;
  // What the state is in messages ("store DIR"), and a map file's name (its path).
  virtual std::string Name() const = 0;
  virtual std::string MapName(MapFile file) const = 0;
  // The bytes of a map file. NotFound when there is none; IoError.
  virtual StatusOr<std::string> ReadMap(MapFile file) const = 0;
  // Replaces a map file atomically (durably when `sync`). IoError.
  virtual Status WriteMap(MapFile file, const std::string& bytes, bool sync) = 0;
  // Renames a map file over another. NotFound when `from` is missing; IoError.
  virtual Status RenameMap(MapFile from, MapFile to) = 0;
  // Removes a map file if there is one (a failure to is not reported: the next start retries).
  virtual void RemoveMap(MapFile file) = 0;
  // A meta row ("params", "move", "tier2_servers"). NotFound when absent; the store's read errors.
  virtual StatusOr<std::string> ReadRow(const std::string& key) const = 0;
  // Puts (a value) and deletes (nullopt) meta rows in one write, durable when it returns.
  // FailedPrecondition for a read-only state; the store's write errors.
  struct RowWrite {
    std::string key;
    std::optional<std::string> value;
  };
  virtual Status WriteRows(std::span<const RowWrite> rows) = 0;
};

// A store's placement state in its directory (StoreLayout) and group store (not owned; it must
// outlive this). Writes are refused when the group store is given const.
class StorePlacementState : public PlacementState {
 public:
  StorePlacementState(StoreLayout layout, tier1::GroupStore* groups) : layout_(std::move(layout)), groups_(groups), writable_(groups) {}
  StorePlacementState(StoreLayout layout, const tier1::GroupStore* groups) : layout_(std::move(layout)), groups_(groups) {}
  std::string Name() const override { return "store " + layout_.dir; }
  std::string MapName(MapFile file) const override;
  StatusOr<std::string> ReadMap(MapFile file) const override;
  Status WriteMap(MapFile file, const std::string& bytes, bool sync) override;
  Status RenameMap(MapFile from, MapFile to) override;
  void RemoveMap(MapFile file) override;
  StatusOr<std::string> ReadRow(const std::string& key) const override;
  Status WriteRows(std::span<const RowWrite> rows) override;

 private:
  StoreLayout layout_;
  const tier1::GroupStore* groups_;
  tier1::GroupStore* writable_ = nullptr;
};

// Placement state in memory (the map files named "map.pb", "map-next.pb", "map-prev.pb"), for
// tests; fail_writes makes every write return IoError. Thread safety: none (tests use one thread).
class MemoryPlacementState : public PlacementState {
 public:
  std::string Name() const override { return "store in memory"; }
  std::string MapName(MapFile file) const override;
  StatusOr<std::string> ReadMap(MapFile file) const override;
  Status WriteMap(MapFile file, const std::string& bytes, bool sync) override;
  Status RenameMap(MapFile from, MapFile to) override;
  void RemoveMap(MapFile file) override;
  StatusOr<std::string> ReadRow(const std::string& key) const override;
  Status WriteRows(std::span<const RowWrite> rows) override;

  std::map<MapFile, std::string> maps;
  std::map<std::string, std::string> rows;
  bool fail_writes = false;
};

// The Tier 2 servers a store's shards are on (meta row "tier2_servers"; empty when the shards are
// in the Tier 1 process): shard m on after[m % after.size()]; during a cluster rebalance also
// `before`, whose servers hold the shards the move drains (m >= the shard count after it).
struct ShardServers {
  std::vector<std::string> before, after;
  bool operator==(const ShardServers&) const = default;
};
// The recorded servers; nullopt when none are. Corruption for a row that is not "before=..." and
// "after=..." lines; the state's read errors.
StatusOr<std::optional<ShardServers>> ReadShardServers(const PlacementState& state);
// Records them (the before line only when `before` is not empty). Errors: WriteRows'.
Status WriteShardServers(PlacementState* state, const ShardServers& servers);
// "a,b,c".
std::string JoinServers(const std::vector<std::string>& servers);
// Where each shard of a move from `shards_before` to `shards_after` shards is: *servers, the
// servers of both lists (before's first, in order, then after's new ones), and per shard the
// index in *servers of the one holding it: shards below shards_after on after's server, the
// drained ones on before's. Both lists must not be empty.
void MoveServerPlacement(const std::vector<std::string>& before, uint32_t shards_before,
                         const std::vector<std::string>& after, uint32_t shards_after,
                         std::vector<std::string>* servers, std::vector<uint32_t>* placement);

class Placement {
 public:
  // One map served, no move (a new store's map, or one read by the caller).
  explicit Placement(partitioner::PartitionMap map);

  // The placement the state records: the served map (map.pb, or map-next.pb when a crash fell
  // between a move's flip and its rename: the one whose digest the parameters name) and, when the
  // journal records a move, its maps (map-prev.pb or map.pb, map-next.pb or map.pb, by their
  // digests). NotFound when the state records no parameters; Corruption for unreadable
  // parameters or journal, a journal in an unknown state, a map none of whose files holds it, or a
  // new map that does not refine the old one (partitioner::CellParents).
  static StatusOr<std::unique_ptr<Placement>> Load(const PlacementState& state);
  // As Load, with the parameters the caller read (not read again).
  static StatusOr<std::unique_ptr<Placement>> Load(const PlacementState& state, const pb::StoreParams& params);

  // A new store's first commit: `map` as map.pb (durably when `sync`), then the parameters
  // (*params, given the map's shard count, generation and digest) that name it, in one write; the
  // placement serving it. A crash in between leaves a map no parameters name (LeftoverMap).
  // Errors: the state's.
  static StatusOr<std::unique_ptr<Placement>> Create(PlacementState* state, partitioner::PartitionMap map,
                                                     pb::StoreParams* params, bool sync);
  // The map a start that committed nothing left (map.pb, with no parameters naming it yet): the
  // next start uses it when it fits, and builds another otherwise. nullopt when there is none;
  // Corruption for a file that is not a partition map; the state's read errors.
  static StatusOr<std::optional<partitioner::PartitionMap>> LeftoverMap(const PlacementState& state);

  // Starts a move (its first durable step): the old map as map-prev.pb, the new one as
  // map-next.pb (durably when `sync`), then the journal (state COPY). Errors: the state's.
  static Status BeginMove(PlacementState* state, const partitioner::PartitionMap& before,
                          const partitioner::PartitionMap& after, const pb::MoveJournal& journal, bool sync);

  // A move is open (it was when loaded; it stays so after End, with done() true).
  bool moving() const { return before_.has_value(); }
  bool flipped() const { return flipped_.load(std::memory_order_acquire); }
  bool done() const { return done_.load(std::memory_order_acquire); }
  const pb::MoveJournal& journal() const { return journal_; }

  // The map whose cells pages are placed in (Home, VectorOf): the served one, or during a move
  // its new map.
  const partitioner::PartitionMap& map() const { return after_; }
  // A move's maps (both map() without a move).
  const partitioner::PartitionMap& before() const { return moving() ? *before_ : after_; }
  const partitioner::PartitionMap& after() const { return after_; }
  // The map routed on: before() until the flip, after() from then on; served(flipped) on the
  // given side of the flip (a batch routed before the flip is routed again after it).
  const partitioner::PartitionMap& served() const { return served(flipped()); }
  const partitioner::PartitionMap& served(bool flipped) const { return moving() && !flipped ? *before_ : after_; }
  // The generation of the map served when loaded (a move's old one until its flip).
  uint64_t generation() const { return generation_; }
  // The shards a store's shard set spans: both maps' during a move.
  uint32_t shard_count() const { return moving() ? std::max(before_->shards(), after_.shards()) : after_.shards(); }

  // The cells a page with map vector `v` is compared on, as shards of the served map (of the side
  // of the flip given).
  void Route(std::span<const uint32_t> v, std::vector<uint32_t>* shards) const { served().RouteShards(v, shards); }
  void Route(bool flipped, std::span<const uint32_t> v, std::vector<uint32_t>* shards) const {
    served(flipped).RouteShards(v, shards);
  }

  // Cells below are map()'s. The shard that holds every page of `cell` now: the old map's (its
  // parent cell's) until the flip, the new one's from then on.
  uint32_t ShardOf(uint32_t cell) const { return !moving() || flipped() ? after_.ShardOf(cell) : OldShard(cell); }
  // The shard that holds `cell`'s pages under the old map (map()'s without a move).
  uint32_t OldShard(uint32_t cell) const { return moving() ? before_->ShardOf(parent_[cell]) : after_.ShardOf(cell); }
  // Where a batch stores a home page of `cell` (out[0] is ShardOf), and removes one from;
  // returns how many of out[0..1] are set.
  int StoreShards(uint32_t cell, uint32_t out[2]) const;
  int RemovalShards(uint32_t cell, uint32_t out[2]) const;
  // Whether a page a batch stores in `cell` is also to be removed from its old shard (from a
  // move's flip to its end, for a cell that changed shard).
  bool ClearsOldShard(uint32_t cell) const {
    return moving() && flipped() && !done() && OldShard(cell) != after_.ShardOf(cell);
  }
  // The old map's cell holding map()'s cell `cell` (the identity without a move or split).
  uint32_t ParentCell(uint32_t cell) const { return moving() ? parent_[cell] : cell; }
  // Whether the old map's cell `old_cell` was split into parts by the move.
  bool Split(uint32_t old_cell) const { return moving() && old_cell < split_.size() && split_[old_cell]; }

  // The move's steps that change it, each durable through `state`. FailedPrecondition without an
  // open move; the state's errors.
  // Adds copied signatures to the journal's counts (written with the flip).
  void CountMoved(uint64_t pages, uint64_t bytes);
  // The flip: the parameters name the new map (generation, digest, shards) and the journal says
  // DROP, in one write; then flipped().
  Status Flip(PlacementState* state);
  // map-next.pb becomes map.pb; *renamed says whether it was there to rename (a restart after the
  // rename finds it gone).
  Status Rename(PlacementState* state, bool* renamed);
  // The end: the journal goes, then map-prev.pb; then done().
  Status End(PlacementState* state);

 private:
  Placement(partitioner::PartitionMap before, partitioner::PartitionMap after, std::vector<uint32_t> parent,
            pb::MoveJournal journal, uint64_t generation);
  std::optional<partitioner::PartitionMap> before_;  // while a move is open
  partitioner::PartitionMap after_;                  // the one map without a move
  std::vector<uint32_t> parent_;  // the old map's cell holding each new one (CellParents)
  std::vector<bool> split_;       // old cells split into parts
  pb::MoveJournal journal_;
  uint64_t generation_ = 0;
  std::atomic<bool> flipped_{false}, done_{false};
};

// Opens a store's group store and placement for reading only (nothing in DIR changes), checks the
// given parameters against the store's, and applies the store's to *config, *threshold and
// *signer. NotFound when DIR holds no store; FailedPrecondition for a parameter given otherwise, or
// a store with no recorded parameters; Corruption as Placement::Load's.
struct OpenedStore {
  OpenedStore();
  ~OpenedStore();
  OpenedStore(OpenedStore&&) noexcept;
  OpenedStore& operator=(OpenedStore&&) noexcept;
  std::unique_ptr<tier1::GroupStore> groups;
  std::unique_ptr<Placement> placement;  // the served map (and a move's maps: pipeline/placement.h)
  pb::StoreParams params;
};
StatusOr<OpenedStore> OpenStoreReadOnly(const StoreLayout& layout, const GivenParams& given, pb::NeardupConfig* config,
                                        double* threshold, SignerOptions* signer);

// The move journal a store records (meta row "move"). NotFound when none; Corruption when
// unreadable.
StatusOr<pb::MoveJournal> ReadMoveJournal(const PlacementState& state);
StatusOr<pb::MoveJournal> ReadMoveJournal(const tier1::GroupStore& groups);

// The old and the new map of the move `journal` records (map-prev.pb or map.pb, and map-next.pb or
// map.pb, each by its digest). Corruption when one is missing.
StatusOr<std::pair<partitioner::PartitionMap, partitioner::PartitionMap>> LoadMoveMaps(const PlacementState& state,
                                                                                      const pb::MoveJournal& journal);

}  // namespace neardup::pipeline
