// PartitionMap: the one place that decides which cell (and so which Tier 2 shard) stores a page
// and which cells a new page must be compared against (the paper's Section 4).
//
// A map slices N length dimensions one after the other: dimension 0 into intervals, then, inside
// each of those, dimension 1 by the pages in it, and so on (a tree of depth N, so that cells stay
// balanced although the dimensions are correlated). The leaves are the cells, each
// a box of per-dimension intervals living on one shard. A page's vector (N lengths, see
// VectorOf) has exactly one home cell. Routing finds every cell that can hold a near-duplicate:
//  - RHO_BOX (the paper's Expression 1): dimension i ranges over [v_i t/rho, v_i rho/t].
//    Approximate: a small rho loses some pairs.
//  - EXACT_L1: with v_i = |A_i| the page's unique shingles whose first word is in
//    sub-dictionary i, Jaccard(A,B) >= t implies sum_i | |A_i| - |B_i| | <= |A xor B| <= (1-t)/t |A|,
//    and, since |A and B| <= sum_i min(|A_i|, |B_i|), also sum_i | |A_i| - |B_i| | <= c (|A| + |B|)
//    with c = (1-t)/(1+t). A cell is contacted when some vector in its box meets both; both sums are
//    least at v clamped into the box, so that one point decides. Loses no pair.
// A page with an all-zero vector (no words) routes nowhere: it is never anyone's duplicate.
//
//   ASSIGN_OR_RETURN(PartitionMap map, PartitionMap::Load("map.pb"));
//   uint32_t home = map.Home(map.VectorOf(features));
//   std::vector<uint32_t> shards;
//   map.RouteShards(map.VectorOf(features), &shards);
//
// Thread safety: a PartitionMap is immutable; all const methods may be called concurrently.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "document/signature.h"
#include "proto/partition.pb.h"

namespace neardup::partitioner {

inline constexpr uint32_t kPartitionMapFormat = 1;

class PartitionMap {
 public:
  // Validates and indexes a map message. InvalidArgument (naming the field) for a wrong format
  // version, a slice tree that is not a tree of depth `dims` covering every cell exactly once,
  // unsorted bounds, a shard out of range, or a bad threshold/rho.
  static StatusOr<PartitionMap> FromProto(pb::PartitionMap proto);
  // IoError if unreadable; Corruption if not a PartitionMap; then as FromProto.
  static StatusOr<PartitionMap> Load(const std::string& path);
  // Writes the binary message. IoError on failure.
  Status Save(const std::string& path) const;

  const pb::PartitionMap& proto() const { return proto_; }
  uint32_t dims() const { return proto_.dims(); }
  uint32_t shards() const { return proto_.shards(); }
  uint32_t cells() const { return static_cast<uint32_t>(proto_.cell_shard_size()); }

  // The vector of a page this map partitions by (its feature), with dims() entries.
  std::span<const uint32_t> VectorOf(const PageFeatures& f) const;
  // SignerOptions whose signatures this map expects.
  SignerOptions signer_options() const;

  // The cell that stores a page; v.size() must equal dims().
  uint32_t Home(std::span<const uint32_t> v) const;
  uint32_t ShardOf(uint32_t cell) const { return proto_.cell_shard(static_cast<int>(cell)); }

  // Replaces *cells with the sorted cells that can hold a near-duplicate of v (home included).
  void RouteCells(std::span<const uint32_t> v, std::vector<uint32_t>* cells) const;
  // Replaces *shards with the sorted, unique shards of RouteCells(v).
  void RouteShards(std::span<const uint32_t> v, std::vector<uint32_t>* shards) const;

 private:
  struct Node {
    std::vector<uint64_t> bounds;  // interval j = [bounds[j-1], bounds[j])
    uint32_t first_child;
  };
  explicit PartitionMap(pb::PartitionMap proto);
  // Calls emit(cell) for every cell routed to (unsorted; each once).
  template <typename Emit>
  void ForEachRoutedCell(std::span<const uint32_t> v, Emit&& emit) const;
  // Interval of x in a node.
  static uint32_t IntervalOf(const Node& node, uint64_t x);
  // L1 distance from x to interval j of a node (0 inside).
  static uint64_t Distance(const Node& node, uint32_t j, uint64_t x);

  pb::PartitionMap proto_;
  std::vector<Node> nodes_;
  std::vector<uint32_t> leaf_cell_;  // the proto's leaf_cell, or the identity
};

// Cuts for one cell: values of the last dimension strictly inside its interval there.
struct CellCut {
  uint32_t cell;
  std::vector<uint64_t> at;
};

// The map with each cut cell split along the last dimension at the cut values (a rebalance's
// re-slicing, partitioner/rebalance.h). A split cell keeps its number, shard and weight for its
// lowest part; every other part is a new cell, numbered from map.cells() up in the order of the
// tree's leaves, on the split cell's shard with weight 0. Every other cell keeps its number, its
// box and its shard, so no page outside the cut cells changes cell. Generation unchanged.
// InvalidArgument for a cell that is not the map's or is cut twice, or a cut outside its interval.
StatusOr<PartitionMap> SplitCells(const PartitionMap& map, std::span<const CellCut> cuts);

// For a map made from `coarser` by SplitCells and shard changes (the same tree, each last-depth
// slice holding the coarser's bounds and maybe more): the coarser cell that holds each of
// `finer`'s cells (the identity when nothing was split). InvalidArgument when `finer` does not
// refine `coarser` so, or numbers one of coarser's cells otherwise than its own lowest part.
StatusOr<std::vector<uint32_t>> CellParents(const PartitionMap& finer, const PartitionMap& coarser);

}  // namespace neardup::partitioner
