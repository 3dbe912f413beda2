#include "partitioner/partition_map.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <bit>
#include <fstream>
#include <iterator>
#include <sstream>

namespace neardup::partitioner {

PartitionMap::PartitionMap(pb::PartitionMap proto) : proto_(std::move(proto)) {
  nodes_.reserve(static_cast<size_t>(proto_.slice_size()));
  for (const auto& sl : proto_.slice()) nodes_.push_back(Node{{sl.bounds().begin(), sl.bounds().end()}, sl.first_child()});
  if (proto_.leaf_cell_size() > 0) {
    leaf_cell_.assign(proto_.leaf_cell().begin(), proto_.leaf_cell().end());
  } else {
    leaf_cell_.resize(static_cast<size_t>(proto_.cell_shard_size()));
    for (size_t i = 0; i < leaf_cell_.size(); ++i) leaf_cell_[i] = static_cast<uint32_t>(i);
  }
}

StatusOr<PartitionMap> PartitionMap::FromProto(pb::PartitionMap p) {
  if (p.format_version() != kPartitionMapFormat) {
    return InvalidArgument("partition map format_version " + std::to_string(p.format_version()) +
                           " is not supported (this build reads version " + std::to_string(kPartitionMapFormat) + ")");
  }
  if (p.dims() < 1 || p.dims() > 16) return InvalidArgument("partition map: dims must be in 1..16, got " + std::to_string(p.dims()));
  if (p.feature() == pb::PartitionMap::FEATURE_UNSPECIFIED) return InvalidArgument("partition map: feature is unset");
  if (p.routing() == pb::PartitionMap::ROUTING_UNSPECIFIED) return InvalidArgument("partition map: routing is unset");
  if (!(p.threshold() > 0 && p.threshold() <= 1)) return InvalidArgument("partition map: threshold must be in (0, 1]");
  if (p.routing() == pb::PartitionMap::RHO_BOX && !(p.rho() >= 1 && std::isfinite(p.rho()))) {
    return InvalidArgument("partition map: rho must be >= 1 for RHO_BOX routing");
  }
  if (p.shingle_k() < 1 || p.shingle_k() > 16) return InvalidArgument("partition map: shingle_k must be in 1..16");
  if (p.shards() < 1) return InvalidArgument("partition map: shards must be >= 1");
  if (p.slice_size() == 0) return InvalidArgument("partition map: no slices");
  if (p.cell_weight_size() != 0 && p.cell_weight_size() != p.cell_shard_size()) {
    return InvalidArgument("partition map: cell_weight has " + std::to_string(p.cell_weight_size()) +
                           " entries for " + std::to_string(p.cell_shard_size()) + " cells");
  }
  // Walk the tree from the root: every node and every cell reached exactly once, depth == dims.
  std::vector<int> node_depth(static_cast<size_t>(p.slice_size()), -1);
  if (p.leaf_cell_size() != 0 && p.leaf_cell_size() != p.cell_shard_size()) {
    return InvalidArgument("partition map: leaf_cell has " + std::to_string(p.leaf_cell_size()) + " entries for " +
                           std::to_string(p.cell_shard_size()) + " cells");
  }
  {
    std::vector<bool> numbered(static_cast<size_t>(p.leaf_cell_size()), false);
    for (int i = 0; i < p.leaf_cell_size(); ++i) {
      const uint32_t c = p.leaf_cell(i);
      if (c >= numbered.size() || numbered[c]) {
        return InvalidArgument("partition map: leaf_cell[" + std::to_string(i) + "] = " + std::to_string(c) +
                               " is not a cell, or numbers a cell twice");
      }
      numbered[c] = true;
    }
  }
  std::vector<bool> cell_seen(static_cast<size_t>(p.cell_shard_size()), false);
  node_depth[0] = 0;
  std::vector<int> stack{0};
  size_t nodes_seen = 1, cells_seen = 0;
  while (!stack.empty()) {
    const int n = stack.back();
    stack.pop_back();
    const auto& sl = p.slice(n);
    const auto& b = sl.bounds();
    for (int j = 0; j < b.size(); ++j) {
      if (b[j] == 0 || (j > 0 && b[j] <= b[j - 1])) {
        return InvalidArgument("partition map: bounds of slice " + std::to_string(n) +
                               " must be positive and strictly increasing (index " + std::to_string(j) + ")");
      }
    }
    const uint64_t first = sl.first_child(), count = static_cast<uint64_t>(b.size()) + 1;
    const bool last = node_depth[n] + 1 == static_cast<int>(p.dims());
    const uint64_t limit = last ? cell_seen.size() : node_depth.size();
    if (first + count > limit) {
      return InvalidArgument("partition map: slice " + std::to_string(n) + " points past the " +
                             (last ? std::string("cells") : std::string("slices")));
    }
    for (uint64_t c = first; c < first + count; ++c) {
      if (last) {
        if (cell_seen[c]) return InvalidArgument("partition map: leaf " + std::to_string(c) + " is reached twice");
        cell_seen[c] = true;
        ++cells_seen;
      } else {
        if (node_depth[c] >= 0) return InvalidArgument("partition map: slice " + std::to_string(c) + " is reached twice");
        node_depth[c] = node_depth[n] + 1;
        ++nodes_seen;
        stack.push_back(static_cast<int>(c));
      }
    }
  }
  if (nodes_seen != node_depth.size() || cells_seen != cell_seen.size()) {
    return InvalidArgument("partition map: the slices do not form one tree of depth " + std::to_string(p.dims()) +
                           " covering all " + std::to_string(p.cell_shard_size()) + " cells");
  }
  for (int c = 0; c < p.cell_shard_size(); ++c) {
    if (p.cell_shard(c) >= p.shards()) {
      return InvalidArgument("partition map: cell " + std::to_string(c) + " is on shard " +
                             std::to_string(p.cell_shard(c)) + " of " + std::to_string(p.shards()));
    }
  }
  return PartitionMap(std::move(p));
}

StatusOr<PartitionMap> PartitionMap::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read partition map " + path + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  pb::PartitionMap p;
  if (!p.ParseFromString(ss.str())) return Corruption(path + " is not a partition map (protobuf parse failed)");
  auto m = FromProto(std::move(p));
  if (!m.ok()) return Status(m.status().code(), path + ": " + m.status().message());
  return m;
}

Status PartitionMap::Save(const std::string& path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !proto_.SerializeToOstream(&out)) return IoError("cannot write partition map " + path);
  out.close();
  if (!out) return IoError("cannot write partition map " + path);
  return Status::Ok();
}

std::span<const uint32_t> PartitionMap::VectorOf(const PageFeatures& f) const {
  return proto_.feature() == pb::PartitionMap::SHINGLE_COUNTS ? std::span<const uint32_t>(f.shingle_vector)
                                                              : std::span<const uint32_t>(f.length_vector);
}

SignerOptions PartitionMap::signer_options() const {
  return SignerOptions{.k = static_cast<int>(proto_.shingle_k()), .dims = static_cast<int>(proto_.dims())};
}

uint32_t PartitionMap::IntervalOf(const Node& node, uint64_t x) {
  return static_cast<uint32_t>(std::upper_bound(node.bounds.begin(), node.bounds.end(), x) - node.bounds.begin());
}

uint64_t PartitionMap::Distance(const Node& node, uint32_t j, uint64_t x) {
  const uint64_t lo = j == 0 ? 0 : node.bounds[j - 1];
  if (x < lo) return lo - x;
  if (j == node.bounds.size()) return 0;
  const uint64_t hi_incl = node.bounds[j] - 1;
  return x > hi_incl ? x - hi_incl : 0;
}

uint32_t PartitionMap::Home(std::span<const uint32_t> v) const {
  const Node* node = &nodes_[0];
  for (uint32_t d = 0;; ++d) {
    const uint32_t child = node->first_child + IntervalOf(*node, v[d]);
    if (d + 1 == dims()) return leaf_cell_[child];
    node = &nodes_[child];
  }
}

template <typename Emit>
void PartitionMap::ForEachRoutedCell(std::span<const uint32_t> v, Emit&& emit) const {
  uint64_t size = 0;
  for (uint32_t x : v) size += x;
  if (size == 0) return;
  const double t = proto_.threshold();
  const bool exact = proto_.routing() == pb::PartitionMap::EXACT_L1;
  // Exact: integer L1 radius (1-t)/t |A| (the L1 distance between integer vectors is an integer).
  const uint64_t radius = exact ? static_cast<uint64_t>(std::floor((1 - t) / t * static_cast<double>(size) + 1e-6)) : 0;
  // Exact, and tighter: with c = (1-t)/(1+t), J >= t implies sum_i |a_i - b_i| <= c (|A| + |B|),
  // i.e. sum_i (|a_i - b_i| - c b_i) <= c |A|. Each term is least, over a cell's interval, at b_i
  // = a_i clamped into it (the L1 distance's least point too), and at b_i = a_i (-c a_i) when the
  // dimension is not fixed yet: a cell is contacted when both bounds hold at that point.
  const double c = (1 - t) / (1 + t);
  const double allowance = c * static_cast<double>(size) * (1 + 1e-9) + 1e-9;
  double rest[17];  // rest[d]: c times the page's lengths in dimensions d.. (their least terms' sum, negated)
  rest[dims()] = 0;
  for (uint32_t d = dims(); d-- > 0;) rest[d] = rest[d + 1] + c * static_cast<double>(v[d]);
  // Rho: per-dimension value ranges of the enlarged box.
  uint64_t lo[16], hi[16];
  if (!exact) {
    const double rho = proto_.rho();
    for (uint32_t d = 0; d < dims(); ++d) {
      lo[d] = static_cast<uint64_t>(std::floor(v[d] * t / rho));
      hi[d] = static_cast<uint64_t>(std::ceil(v[d] * rho / t));
    }
  }
  struct Frame { uint32_t node; uint32_t depth; uint64_t dist; double terms; };
  thread_local std::vector<Frame> stack;
  stack.clear();
  stack.push_back({0, 0, 0, 0.0});
  while (!stack.empty()) {
    const Frame f = stack.back();
    stack.pop_back();
    const Node& node = nodes_[f.node];
    const uint64_t x = v[f.depth];
    const bool last = f.depth + 1 == dims();
    uint32_t first, end;
    if (exact) {
      const uint64_t budget = radius - f.dist;
      first = IntervalOf(node, x > budget ? x - budget : 0);
      end = IntervalOf(node, x + budget) + 1;
    } else {
      first = IntervalOf(node, lo[f.depth]);
      end = IntervalOf(node, hi[f.depth]) + 1;
    }
    for (uint32_t j = first; j < end; ++j) {
      uint64_t dist = 0;
      double terms = 0;
      if (exact) {
        const uint64_t gap = Distance(node, j, x);
        dist = f.dist + gap;
        if (dist > radius) continue;
        // The interval's point nearest x: x itself, or the bound on x's side.
        const uint64_t lo_j = j == 0 ? 0 : node.bounds[j - 1];
        const uint64_t y = x < lo_j ? lo_j : x - (gap > 0 ? gap : 0);
        terms = f.terms + static_cast<double>(gap) - c * static_cast<double>(y);
        if (terms - rest[f.depth + 1] > allowance) continue;
      }
      if (last) emit(leaf_cell_[node.first_child + j]);
      else stack.push_back({node.first_child + j, f.depth + 1, dist, terms});
    }
  }
}

void PartitionMap::RouteCells(std::span<const uint32_t> v, std::vector<uint32_t>* cells) const {
  cells->clear();
  ForEachRoutedCell(v, [cells](uint32_t c) { cells->push_back(c); });
  std::sort(cells->begin(), cells->end());
}

void PartitionMap::RouteShards(std::span<const uint32_t> v, std::vector<uint32_t>* shards) const {
  // A bitmap of shards keeps the result sorted and unique without sorting.
  thread_local std::vector<uint64_t> bits;
  bits.assign((this->shards() + 63) / 64, 0);
  const auto* cell_shard = proto_.cell_shard().data();
  ForEachRoutedCell(v, [&](uint32_t c) {
    const uint32_t m = cell_shard[c];
    bits[m >> 6] |= uint64_t{1} << (m & 63);
  });
  shards->clear();
  for (size_t w = 0; w < bits.size(); ++w) {
    for (uint64_t b = bits[w]; b != 0; b &= b - 1) shards->push_back(static_cast<uint32_t>(w * 64 + std::countr_zero(b)));
  }
}

namespace {

uint32_t CellOfLeaf(const pb::PartitionMap& p, uint32_t leaf) {
  return p.leaf_cell_size() > 0 ? p.leaf_cell(static_cast<int>(leaf)) : leaf;
}

// The nodes of the last depth (whose intervals are leaves) of a valid map, by first leaf.
std::vector<uint32_t> LastDepthNodes(const pb::PartitionMap& p) {
  std::vector<uint32_t> depth(static_cast<size_t>(p.slice_size()), 0);
  std::vector<uint32_t> last;
  std::vector<uint32_t> queue{0};
  for (size_t i = 0; i < queue.size(); ++i) {
    const uint32_t n = queue[i];
    const auto& sl = p.slice(static_cast<int>(n));
    if (depth[n] + 1 == p.dims()) {
      last.push_back(n);
      continue;
    }
    for (uint32_t j = 0; j <= static_cast<uint32_t>(sl.bounds_size()); ++j) {
      depth[sl.first_child() + j] = depth[n] + 1;
      queue.push_back(sl.first_child() + j);
    }
  }
  std::sort(last.begin(), last.end(), [&p](uint32_t a, uint32_t b) {
    return p.slice(static_cast<int>(a)).first_child() < p.slice(static_cast<int>(b)).first_child();
  });
  return last;
}

}  // namespace

StatusOr<PartitionMap> SplitCells(const PartitionMap& map, std::span<const CellCut> cuts) {
  const pb::PartitionMap& p = map.proto();
  const uint32_t cells = map.cells();
  std::vector<uint32_t> leaf_of(cells);
  for (uint32_t leaf = 0; leaf < cells; ++leaf) leaf_of[CellOfLeaf(p, leaf)] = leaf;
  std::vector<std::vector<uint64_t>> leaf_cuts(cells);
  for (const CellCut& cut : cuts) {
    if (cut.cell >= cells) {
      return InvalidArgument("split: cell " + std::to_string(cut.cell) + " is not one of the map's " + std::to_string(cells));
    }
    std::vector<uint64_t>& at = leaf_cuts[leaf_of[cut.cell]];
    if (!at.empty()) return InvalidArgument("split: cell " + std::to_string(cut.cell) + " is cut twice");
    at = cut.at;
    std::sort(at.begin(), at.end());
    at.erase(std::unique(at.begin(), at.end()), at.end());
  }
  pb::PartitionMap q = p;
  q.clear_leaf_cell();
  uint32_t next_leaf = 0, next_cell = cells;
  for (const uint32_t n : LastDepthNodes(p)) {
    const auto& old = p.slice(static_cast<int>(n));
    auto* sl = q.mutable_slice(static_cast<int>(n));
    sl->clear_bounds();
    sl->set_first_child(next_leaf);
    for (uint32_t j = 0; j <= static_cast<uint32_t>(old.bounds_size()); ++j) {
      const uint32_t leaf = old.first_child() + j, cell = CellOfLeaf(p, leaf);
      const uint64_t lo = j == 0 ? 0 : old.bounds(static_cast<int>(j) - 1);
      const uint64_t hi = j == static_cast<uint32_t>(old.bounds_size()) ? ~uint64_t{0} : old.bounds(static_cast<int>(j));
      if (j > 0) sl->add_bounds(lo);
      q.add_leaf_cell(cell);
      ++next_leaf;
      for (const uint64_t v : leaf_cuts[leaf]) {
        if (v <= lo || v >= hi) {
          return InvalidArgument("split: cut " + std::to_string(v) + " of cell " + std::to_string(cell) +
                                 " is not inside its last interval [" + std::to_string(lo) + ", " +
                                 (hi == ~uint64_t{0} ? std::string("inf") : std::to_string(hi)) + ")");
        }
        sl->add_bounds(v);
        q.add_leaf_cell(next_cell++);
        q.add_cell_shard(map.ShardOf(cell));
        if (q.cell_weight_size() > 0) q.add_cell_weight(0);
        ++next_leaf;
      }
    }
  }
  return PartitionMap::FromProto(std::move(q));
}

StatusOr<std::vector<uint32_t>> CellParents(const PartitionMap& finer, const PartitionMap& coarser) {
  const pb::PartitionMap& f = finer.proto();
  const pb::PartitionMap& c = coarser.proto();
  auto differ = [](const std::string& what) {
    return InvalidArgument("the new map does not refine the old one: " + what);
  };
  if (f.dims() != c.dims() || f.slice_size() != c.slice_size()) return differ("another tree");
  if (finer.cells() < coarser.cells()) return differ("fewer cells");
  const std::vector<uint32_t> last = LastDepthNodes(c);
  std::vector<bool> is_last(static_cast<size_t>(c.slice_size()), false);
  for (const uint32_t n : last) is_last[n] = true;
  std::vector<uint32_t> parent(finer.cells(), 0);
  for (int n = 0; n < c.slice_size(); ++n) {
    const auto& fs = f.slice(n);
    const auto& cs = c.slice(n);
    if (!is_last[static_cast<size_t>(n)]) {
      if (fs.first_child() != cs.first_child() ||
          !std::equal(fs.bounds().begin(), fs.bounds().end(), cs.bounds().begin(), cs.bounds().end())) {
        return differ("slice " + std::to_string(n) + " differs");
      }
      continue;
    }
    if (!std::includes(fs.bounds().begin(), fs.bounds().end(), cs.bounds().begin(), cs.bounds().end())) {
      return differ("slice " + std::to_string(n) + " lost a bound");
    }
    for (uint32_t j = 0; j <= static_cast<uint32_t>(fs.bounds_size()); ++j) {
      const uint64_t lo = j == 0 ? 0 : fs.bounds(static_cast<int>(j) - 1);
      const uint32_t k = static_cast<uint32_t>(std::upper_bound(cs.bounds().begin(), cs.bounds().end(), lo) - cs.bounds().begin());
      parent[CellOfLeaf(f, fs.first_child() + j)] = CellOfLeaf(c, cs.first_child() + k);
    }
  }
  for (uint32_t cell = 0; cell < coarser.cells(); ++cell) {
    if (parent[cell] != cell) return differ("cell " + std::to_string(cell) + " is numbered otherwise");
  }
  return parent;
}

}  // namespace neardup::partitioner
