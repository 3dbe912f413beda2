#include "partitioner/map_builder.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>

#include "partitioner/balanced_ranges.h"

namespace neardup::partitioner {

pb::PartitionMap::Feature FeatureFor(pb::PartitionMap::Routing routing) {
  return routing == pb::PartitionMap::EXACT_L1 ? pb::PartitionMap::SHINGLE_COUNTS : pb::PartitionMap::WORD_LENGTHS;
}

double Imbalance(const std::vector<double>& load) {
  if (load.empty()) return 1;
  const double total = std::accumulate(load.begin(), load.end(), 0.0);
  if (total <= 0) return 1;
  return *std::max_element(load.begin(), load.end()) / (total / static_cast<double>(load.size()));
}

namespace {

std::vector<double> ShardLoads(const std::vector<double>& cell_weight, const std::vector<uint32_t>& shard_of,
                               uint32_t shards) {
  std::vector<double> load(shards, 0.0);
  for (size_t c = 0; c < cell_weight.size(); ++c) {
    if (cell_weight[c] > 0) load[shard_of[c]] += cell_weight[c];
  }
  return load;
}

// Empty cells (no sample page yet): round-robin, least-loaded shards first.
void AssignEmptyCells(const std::vector<double>& cell_weight, uint32_t shards, std::vector<uint32_t>* shard_of) {
  const std::vector<double> load = ShardLoads(cell_weight, *shard_of, shards);
  std::vector<uint32_t> by_load(shards);
  std::iota(by_load.begin(), by_load.end(), 0u);
  std::stable_sort(by_load.begin(), by_load.end(), [&](uint32_t a, uint32_t b) { return load[a] < load[b]; });
  size_t i = 0;
  for (size_t c = 0; c < cell_weight.size(); ++c) {
    if (cell_weight[c] <= 0) (*shard_of)[c] = by_load[i++ % by_load.size()];
  }
}

// A step of RefineAssignment that exchanges up to two cells each way between the heaviest
// shard `hi` and another shard (when no single move or swap helps): for every shard x, the
// sums of one or two of hi's cells against the sums of none, one or two of x's cells (sorted, so
// each of hi's sums finds its best partner by binary search). Banded: two for two cells of the
// same two bands only. Applies the best exchange and returns true if it lowers the larger of
// the two shards' loads below load[hi].
bool CompoundStep(const std::vector<double>& w, const RefineOptions& o, uint32_t hi, std::vector<double>* load,
                  std::vector<std::vector<uint32_t>>* cells_of, std::vector<uint32_t>* shard_of, double* moved) {
  struct Combo {
    double v;
    int64_t a, b;  // cells (-1: none)
    uint64_t key;  // banded: the two bands, ordered
  };
  const bool banded = !o.band.empty();
  auto key_of = [&](int64_t a, int64_t b) -> uint64_t {
    if (!banded || a < 0 || b < 0) return 0;
    uint64_t x = o.band[static_cast<size_t>(a)], y = o.band[static_cast<size_t>(b)];
    if (x > y) std::swap(x, y);
    return (x << 32) | y;
  };
  auto combos = [&](const std::vector<uint32_t>& cells, bool with_empty) {
    std::vector<Combo> out;
    if (with_empty && !banded && o.moves) out.push_back({0, -1, -1, 0});
    for (size_t i = 0; i < cells.size(); ++i) {
      if (!banded) out.push_back({w[cells[i]], cells[i], -1, 0});
      for (size_t j = i + 1; j < cells.size(); ++j) {
        out.push_back({w[cells[i]] + w[cells[j]], cells[i], cells[j], key_of(cells[i], cells[j])});
      }
    }
    std::sort(out.begin(), out.end(), [](const Combo& a, const Combo& b) {
      return a.key != b.key ? a.key < b.key : a.v != b.v ? a.v < b.v : a.a != b.a ? a.a < b.a : a.b < b.b;
    });
    return out;
  };
  const std::vector<Combo> mine = combos((*cells_of)[hi], false);
  const double top = (*load)[hi];
  double best = top - 1e-12 * top;
  uint32_t bx = hi;
  Combo bh{}, bv{};
  const uint32_t shards = static_cast<uint32_t>(load->size());
  for (uint32_t x = 0; x < shards; ++x) {
    if (x == hi) continue;
    const double gap = top - (*load)[x];
    if (gap <= 0) continue;
    const std::vector<Combo> theirs = combos((*cells_of)[x], true);
    for (const Combo& h : mine) {
      // Partner value nearest h.v - gap / 2 among combos of the same key.
      const double want = h.v - gap / 2;
      auto it = std::lower_bound(theirs.begin(), theirs.end(), Combo{want, -1, -1, h.key},
                                 [](const Combo& a, const Combo& b) { return a.key != b.key ? a.key < b.key : a.v < b.v; });
      for (auto c = it - (it == theirs.begin() ? 0 : 1); c != theirs.end() && c <= it; ++c) {
        if (c->key != h.key) continue;
        const double d = h.v - c->v;
        if (d <= 0 || *moved + h.v + c->v > o.move_budget) continue;
        const double worst = std::max(top - d, (*load)[x] + d);
        if (worst < best) { best = worst; bx = x; bh = h; bv = *c; }
      }
    }
  }
  if (bx == hi) return false;
  auto move = [&](int64_t cell, uint32_t from, uint32_t to) {
    if (cell < 0) return;
    const uint32_t c = static_cast<uint32_t>(cell);
    auto& list = (*cells_of)[from];
    list.erase(std::find(list.begin(), list.end(), c));
    (*cells_of)[to].push_back(c);
    (*shard_of)[c] = to;
    (*load)[from] -= w[c];
    (*load)[to] += w[c];
    *moved += w[c];
  };
  move(bh.a, hi, bx);
  move(bh.b, hi, bx);
  move(bv.a, bx, hi);
  move(bv.b, bx, hi);
  return true;
}

}  // namespace

double RefineAssignment(const std::vector<double>& w, std::vector<uint32_t>* shard_of, uint32_t shards,
                        const RefineOptions& o) {
  if (shards < 2) return 0;
  const bool banded = !o.band.empty();
  std::vector<double> load = ShardLoads(w, *shard_of, shards);
  std::vector<std::vector<uint32_t>> cells_of(shards);
  for (uint32_t c = 0; c < w.size(); ++c) {
    if (w[c] > 0) cells_of[(*shard_of)[c]].push_back(c);
  }
  const double mean = std::accumulate(load.begin(), load.end(), 0.0) / shards;
  auto move_cell = [&](uint32_t from, size_t index, uint32_t to) {
    const uint32_t c = cells_of[from][index];
    load[from] -= w[c];
    load[to] += w[c];
    (*shard_of)[c] = to;
    cells_of[from].erase(cells_of[from].begin() + static_cast<std::ptrdiff_t>(index));
    cells_of[to].push_back(c);
  };
  double moved = 0;
  for (size_t step = 0; step < o.max_steps; ++step) {
    const uint32_t hi = static_cast<uint32_t>(std::max_element(load.begin(), load.end()) - load.begin());
    if (mean <= 0 || load[hi] / mean <= o.target_imbalance) break;
    // Best step: the smallest max(new load of hi, new load of x) over shards x and cells.
    const double eps = 1e-12 * load[hi];
    double best = load[hi] - eps;
    int64_t bx = -1, bi = -1, bj = -1;
    for (uint32_t x = 0; x < shards; ++x) {
      if (x == hi) continue;
      for (size_t i = 0; i < cells_of[hi].size(); ++i) {
        const double wi = w[cells_of[hi][i]];
        if (o.moves && !banded && moved + wi <= o.move_budget) {
          const double worst = std::max(load[hi] - wi, load[x] + wi);
          if (worst < best) { best = worst; bx = x; bi = static_cast<int64_t>(i); bj = -1; }
        }
        if (!o.swaps) continue;
        for (size_t j = 0; j < cells_of[x].size(); ++j) {
          const uint32_t cj = cells_of[x][j];
          const double d = wi - w[cj];
          if (d <= 0 || moved + wi + w[cj] > o.move_budget) continue;
          if (banded && o.band[cells_of[hi][i]] != o.band[cj]) continue;
          const double worst = std::max(load[hi] - d, load[x] + d);
          if (worst < best) { best = worst; bx = x; bi = static_cast<int64_t>(i); bj = static_cast<int64_t>(j); }
        }
      }
    }
    if (bx < 0) {
      if (!o.compound || !CompoundStep(w, o, hi, &load, &cells_of, shard_of, &moved)) break;
      continue;
    }
    const uint32_t x = static_cast<uint32_t>(bx);
    moved += w[cells_of[hi][static_cast<size_t>(bi)]];
    if (bj >= 0) moved += w[cells_of[x][static_cast<size_t>(bj)]];
    move_cell(hi, static_cast<size_t>(bi), x);
    if (bj >= 0) move_cell(x, static_cast<size_t>(bj), hi);  // bj still indexes the cell chosen
  }
  return moved;
}

std::vector<uint32_t> AssignCellsLargestFirst(const std::vector<double>& cell_weight, uint32_t shards) {
  std::vector<uint32_t> order(cell_weight.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return cell_weight[a] > cell_weight[b]; });
  using Slot = std::pair<double, uint32_t>;  // (load, shard): least load first, then lowest id
  std::priority_queue<Slot, std::vector<Slot>, std::greater<Slot>> heap;
  for (uint32_t m = 0; m < shards; ++m) heap.emplace(0.0, m);
  std::vector<uint32_t> shard_of(cell_weight.size(), 0);
  for (uint32_t c : order) {
    if (cell_weight[c] <= 0) continue;
    auto [load, m] = heap.top();
    heap.pop();
    shard_of[c] = m;
    heap.emplace(load + cell_weight[c], m);
  }
  RefineAssignment(cell_weight, &shard_of, shards, {});
  AssignEmptyCells(cell_weight, shards, &shard_of);
  return shard_of;
}

std::vector<uint32_t> AssignCellsSpread(const std::vector<double>& cell_weight, uint32_t shards,
                                        const std::vector<double>& cell_length) {
  // Non-empty cells in length order (index order without lengths); bands over their ranks.
  std::vector<uint32_t> order;
  for (uint32_t c = 0; c < cell_weight.size(); ++c) {
    if (cell_weight[c] > 0) order.push_back(c);
  }
  if (cell_length.size() == cell_weight.size()) {
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return cell_length[a] < cell_length[b]; });
  }
  std::vector<WeightedValue> values;
  for (size_t rank = 0; rank < order.size(); ++rank) values.push_back({rank, cell_weight[order[rank]]});
  const size_t bands = shards == 0 ? 1 : values.size() / shards;
  if (bands < 2) return AssignCellsLargestFirst(cell_weight, shards);
  auto ranges = BalanceRanges(std::move(values), BalanceOptions{.ranges = bands});
  if (!ranges.ok()) return AssignCellsLargestFirst(cell_weight, shards);  // weights were checked upstream
  std::vector<std::vector<uint32_t>> band_cells(ranges->size());
  RefineOptions refine;
  refine.band.assign(cell_weight.size(), 0);
  for (size_t rank = 0; rank < order.size(); ++rank) {
    const uint32_t c = order[rank];
    refine.band[c] = static_cast<uint32_t>(FindRange(*ranges, rank));
    band_cells[refine.band[c]].push_back(c);
  }
  std::vector<uint32_t> shard_of(cell_weight.size(), 0);
  std::vector<double> load(shards, 0.0);
  std::vector<char> used(shards, 0);
  for (auto& cells : band_cells) {
    std::stable_sort(cells.begin(), cells.end(), [&](uint32_t a, uint32_t b) { return cell_weight[a] > cell_weight[b]; });
    std::fill(used.begin(), used.end(), 0);
    uint32_t free_shards = shards;
    for (uint32_t c : cells) {
      if (free_shards == 0) {
        std::fill(used.begin(), used.end(), 0);
        free_shards = shards;
      }
      uint32_t pick = 0;
      bool found = false;
      for (uint32_t m = 0; m < shards; ++m) {
        if (!used[m] && (!found || load[m] < load[pick])) { pick = m; found = true; }
      }
      used[pick] = 1;
      --free_shards;
      shard_of[c] = pick;
      load[pick] += cell_weight[c];
    }
  }
  refine.moves = false;
  RefineAssignment(cell_weight, &shard_of, shards, refine);
  AssignEmptyCells(cell_weight, shards, &shard_of);
  return shard_of;
}

StatusOr<PartitionMap> BuildPartitionMap(const LengthSample& sample, const MapBuildOptions& o,
                                         std::span<const double> page_load) {
  if (o.dims < 1 || o.dims > 16) return InvalidArgument("dims must be in 1..16, got " + std::to_string(o.dims));
  if (sample.dims() != o.dims) {
    return InvalidArgument("the sample has " + std::to_string(sample.dims()) + " dimensions, the map wants " +
                           std::to_string(o.dims));
  }
  if (o.shards < 1) return InvalidArgument("shards must be >= 1");
  if (!(o.threshold > 0 && o.threshold < 1)) return InvalidArgument("threshold must be in (0, 1)");
  if (o.cells_per_shard < 1) return InvalidArgument("cells_per_shard must be >= 1");
  if (o.routing == pb::PartitionMap::RHO_BOX && !(o.rho >= 1)) return InvalidArgument("rho must be >= 1");
  if (!(o.fine_grain >= 0 && o.fine_grain < 1)) return InvalidArgument("fine_grain must be in [0, 1)");
  const double fine_grain = o.fine_grain > 0 ? o.fine_grain : o.threshold;
  if (!page_load.empty() && page_load.size() != sample.size()) {
    return InvalidArgument("page_load has " + std::to_string(page_load.size()) + " entries for " +
                           std::to_string(sample.size()) + " sampled pages");
  }
  for (double l : page_load) {
    if (!(l >= 0 && std::isfinite(l))) return InvalidArgument("page_load must be finite and >= 0, got " + std::to_string(l));
  }
  if (sample.size() == 0) return FailedPrecondition("cannot build a partition map from an empty sample");

  const auto feature = FeatureFor(o.routing);
  // At least 64 cells: few shards still get enough pieces to balance.
  const double target_cells = std::max(64.0, static_cast<double>(o.cells_per_shard) * o.shards);
  const size_t per_dim = std::max<size_t>(1, static_cast<size_t>(std::llround(std::pow(target_cells, 1.0 / o.dims))));

  pb::PartitionMap p;
  p.set_format_version(kPartitionMapFormat);
  p.set_generation(1);
  p.set_feature(feature);
  p.set_routing(o.routing);
  p.set_rho(o.routing == pb::PartitionMap::RHO_BOX ? o.rho : 1.0);
  p.set_threshold(o.threshold);
  p.set_shingle_k(o.shingle_k);
  p.set_dims(o.dims);
  p.set_shards(o.shards);
  p.set_sample_pages(sample.size());
  p.set_fine_grain(fine_grain);
  p.set_cells_per_shard(o.cells_per_shard);
  // Breadth-first: slice dimension d of each node's own pages; children are allocated together,
  // so each node's children (or cells, at the last depth) are contiguous.
  struct Pending {
    int slice;
    uint32_t depth;
    std::vector<uint32_t> points;
  };
  std::vector<Pending> queue;
  queue.push_back({0, 0, std::vector<uint32_t>(sample.size())});
  std::iota(queue[0].points.begin(), queue[0].points.end(), 0u);
  p.add_slice();
  std::vector<double> weight;
  std::vector<double> load;    // per cell: the sum of its pages' page_load (when given)
  std::vector<double> length;  // per cell: mean total length (sum over dimensions) of its pages
  for (size_t q = 0; q < queue.size(); ++q) {
    Pending node = std::move(queue[q]);
    std::vector<WeightedValue> values;
    values.reserve(node.points.size());
    for (uint32_t i : node.points) values.push_back({sample.Vector(i, feature)[node.depth], 1.0});
    ASSIGN_OR_RETURN(auto ranges, BalanceRanges(std::move(values), BalanceOptions{.ranges = per_dim, .tau = fine_grain}));
    auto* slice = p.mutable_slice(node.slice);
    for (size_t r = 1; r < ranges.size(); ++r) slice->add_bounds(ranges[r].lo);
    if (node.depth + 1 == o.dims) {
      slice->set_first_child(static_cast<uint32_t>(weight.size()));
      for (const auto& r : ranges) weight.push_back(r.weight);
      // Per cell, the loads of its pages and (for the spread assignment) their lengths.
      const size_t first_cell = weight.size() - ranges.size();
      if (!page_load.empty()) load.resize(weight.size(), 0.0);
      if (o.spread_shards) length.resize(weight.size(), 0.0);
      if (!page_load.empty() || o.spread_shards) {
        for (uint32_t i : node.points) {
          const auto v = sample.Vector(i, feature);
          const size_t c = first_cell + FindRange(ranges, v[node.depth]);
          if (!page_load.empty()) load[c] += page_load[i];
          if (o.spread_shards) length[c] += std::accumulate(v.begin(), v.end(), 0.0);
        }
      }
      if (o.spread_shards) {
        for (size_t c = first_cell; c < weight.size(); ++c) length[c] /= std::max(1.0, weight[c]);
      }
      continue;
    }
    const int first = p.slice_size();
    slice->set_first_child(static_cast<uint32_t>(first));
    std::vector<std::vector<uint32_t>> parts(ranges.size());
    for (uint32_t i : node.points) parts[FindRange(ranges, sample.Vector(i, feature)[node.depth])].push_back(i);
    for (size_t r = 0; r < ranges.size(); ++r) {
      p.add_slice();
      queue.push_back({first + static_cast<int>(r), node.depth + 1, std::move(parts[r])});
    }
  }
  const std::vector<double>& by = page_load.empty() ? weight : load;
  const std::vector<uint32_t> shard_of = o.contiguous_shards ? AssignCellsContiguous(by, o.shards)
                                         : o.spread_shards   ? AssignCellsSpread(by, o.shards, length)
                                                             : AssignCellsLargestFirst(by, o.shards);
  p.mutable_cell_shard()->Assign(shard_of.begin(), shard_of.end());
  p.mutable_cell_weight()->Assign(weight.begin(), weight.end());
  return PartitionMap::FromProto(std::move(p));
}

std::vector<uint32_t> AssignCellsContiguous(const std::vector<double>& cell_weight, uint32_t shards) {
  std::vector<uint32_t> shard_of(cell_weight.size(), 0);
  std::vector<WeightedValue> values;
  for (size_t c = 0; c < cell_weight.size(); ++c) {
    // A tiny floor keeps empty cells from all collapsing into one range.
    values.push_back({c, std::max(cell_weight[c], 1e-9)});
  }
  BalanceOptions bo;
  bo.ranges = shards;
  auto ranges = BalanceRanges(std::move(values), bo);
  if (!ranges.ok()) return AssignCellsLargestFirst(cell_weight, shards);  // weights were checked upstream
  for (size_t c = 0; c < cell_weight.size(); ++c) {
    shard_of[c] = static_cast<uint32_t>(std::min<size_t>(FindRange(*ranges, c), shards - 1));
  }
  return shard_of;
}

MapEvaluation EvaluateMap(const PartitionMap& map, const LengthSample& sample) {
  MapEvaluation e;
  e.pages = sample.size();
  e.shard_pages.assign(map.shards(), 0.0);
  const auto feature = map.proto().feature();
  std::vector<uint32_t> cells, shards;
  uint64_t routed = 0, cell_sends = 0, shard_sends = 0;
  for (size_t i = 0; i < sample.size(); ++i) {
    const auto v = sample.Vector(i, feature);
    e.shard_pages[map.ShardOf(map.Home(v))] += 1;
    map.RouteCells(v, &cells);
    if (cells.empty()) continue;
    ++routed;
    cell_sends += cells.size();
    map.RouteShards(v, &shards);
    shard_sends += shards.size();
  }
  e.imbalance = Imbalance(e.shard_pages);
  if (routed > 0) {
    e.mean_cells_contacted = static_cast<double>(cell_sends) / routed;
    e.mean_shards_contacted = static_cast<double>(shard_sends) / routed;
    e.communication_reduction = 1 - static_cast<double>(shard_sends) / (static_cast<double>(routed) * map.shards());
  }
  return e;
}

RhoEstimate EstimateRho(const LengthSample& sample, double percentile) {
  RhoEstimate r;
  r.percentile = percentile;
  std::vector<double> deltas, epsilons;
  const double n = sample.dims();
  for (size_t i = 0; i < sample.size(); ++i) {
    const double words = sample.word_count(i);
    if (words <= 0) continue;
    double delta = 0;
    for (uint32_t x : sample.Vector(i, pb::PartitionMap::WORD_LENGTHS)) delta = std::max(delta, std::abs(n * x / words - 1));
    deltas.push_back(delta);
    epsilons.push_back(std::abs(sample.shingle_count(i) / words - 1));
  }
  r.pages = deltas.size();
  if (deltas.empty()) return r;
  auto at = [&](std::vector<double>& v) {
    const size_t k = std::min(v.size() - 1, static_cast<size_t>(std::ceil(percentile / 100.0 * v.size())) - 1);
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return std::min(0.95, v[k]);
  };
  r.delta = at(deltas);
  r.epsilon = at(epsilons);
  r.rho = std::max(1.0, (1 + r.delta) * (1 + r.epsilon) / ((1 - r.delta) * (1 - r.epsilon)));
  return r;
}

}  // namespace neardup::partitioner
