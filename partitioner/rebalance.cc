#include "partitioner/rebalance.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "partitioner/map_builder.h"

namespace neardup::partitioner {
namespace {

std::vector<double> Loads(const std::vector<double>& cell_weight, const std::vector<uint32_t>& shard_of, uint32_t shards) {
  std::vector<double> load(shards, 0.0);
  for (size_t c = 0; c < cell_weight.size(); ++c) load[shard_of[c]] += cell_weight[c];
  return load;
}

// ReassignCells' plan within `budget` (a share of `total`): each cell's shard among `shards`.
std::vector<uint32_t> AssignWithin(const std::vector<double>& w, const std::vector<uint32_t>& old_shard,
                                   uint32_t shards_before, uint32_t shards, double total, double target_imbalance,
                                   double budget) {
  const size_t cells = w.size();
  std::vector<uint32_t> shard_of = old_shard;
  // Drained shards' cells first: heaviest first, to the least-loaded shard that stays.
  std::vector<double> load(shards, 0.0);
  std::vector<uint32_t> drained;
  for (uint32_t c = 0; c < cells; ++c) {
    if (shard_of[c] < shards) load[shard_of[c]] += w[c];
    else drained.push_back(c);
  }
  std::stable_sort(drained.begin(), drained.end(), [&](uint32_t a, uint32_t b) { return w[a] > w[b]; });
  double forced = 0;
  for (uint32_t c : drained) {
    const uint32_t to = static_cast<uint32_t>(std::min_element(load.begin(), load.end()) - load.begin());
    shard_of[c] = to;
    load[to] += w[c];
    forced += w[c];
  }
  // Growing: the new shards are filled largest cell first, each cell staying where it is while
  // its shard has room (the mean times target_imbalance), else going to the least-loaded shard,
  // within the budget. (The local search below, alone, spends its budget on cells it moves twice.)
  if (shards > shards_before) {
    const double cap = total / shards * std::max(1.0, target_imbalance);
    std::vector<uint32_t> order;
    for (uint32_t c = 0; c < cells; ++c) {
      if (w[c] > 0) order.push_back(c);
    }
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return w[a] > w[b]; });
    std::vector<double> placed(shards, 0.0);
    for (uint32_t c : order) {
      const uint32_t least = static_cast<uint32_t>(std::min_element(placed.begin(), placed.end()) - placed.begin());
      uint32_t to = shard_of[c];
      if (placed[to] + w[c] > cap && placed[least] + w[c] < placed[to] + w[c] && forced + w[c] <= budget * total) {
        to = least;
        forced += w[c];
      }
      placed[to] += w[c];
      shard_of[c] = to;
    }
  }
  RefineAssignment(w, &shard_of, shards,
                   {.move_budget = std::max(0.0, budget * total - forced),
                    .target_imbalance = target_imbalance,
                    .compound = false});
  return shard_of;
}

// Step 2: the map sliced again from the fresh sample, each new cell given to the shard that
// already holds most of its pages (old_home: each sample page's old cell, old_shard: each old
// cell's shard), within capacity (target_imbalance of the mean load); the cells that fit nowhere
// go to the least loaded shard (or, without pages, as largest-first places them).
struct ReslicedMap {
  pb::PartitionMap proto;           // the new map, without its cell assignment
  std::vector<double> cell_weight;  // sample pages per new cell
  std::vector<uint32_t> home;       // each sample page's new cell
  std::vector<uint32_t> assign;     // each new cell's shard
  std::vector<double> load;         // each shard's pages
};

StatusOr<ReslicedMap> Reslice(const PartitionMap& old_map, const LengthSample& fresh,
                              const std::vector<uint32_t>& old_home, const std::vector<uint32_t>& old_shard,
                              double target_imbalance) {
  const auto feature = old_map.proto().feature();
  const uint32_t shards = old_map.shards();
  const double total = static_cast<double>(fresh.size());
  MapBuildOptions b;
  b.dims = old_map.dims();
  b.shards = shards;
  b.threshold = old_map.proto().threshold();
  b.routing = old_map.proto().routing();
  b.rho = std::max(1.0, old_map.proto().rho());
  b.cells_per_shard = std::max(1u, old_map.proto().cells_per_shard());
  b.fine_grain = old_map.proto().fine_grain();
  b.shingle_k = old_map.proto().shingle_k();
  ASSIGN_OR_RETURN(PartitionMap sliced, BuildPartitionMap(fresh, b));
  // Give each new cell to the shard that already holds most of its pages, within capacity.
  const uint32_t cells = sliced.cells();
  std::vector<double> cw(cells, 0.0);
  std::vector<std::map<uint32_t, double>> overlap(cells);
  std::vector<uint32_t> home(fresh.size());
  for (size_t i = 0; i < fresh.size(); ++i) {
    home[i] = sliced.Home(fresh.Vector(i, feature));
    cw[home[i]] += 1;
    overlap[home[i]][old_shard[old_home[i]]] += 1;
  }
  std::vector<uint32_t> order(cells);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t c) { return cw[a] > cw[c]; });
  const double cap = total / shards * target_imbalance;
  std::vector<double> load(shards, 0.0);
  std::vector<uint32_t> assign(cells, 0);
  const std::vector<uint32_t> lpt = AssignCellsLargestFirst(cw, shards);
  for (uint32_t c : order) {
    int64_t chosen = -1;
    double best = 0;
    for (const auto& [m, pages] : overlap[c]) {
      if (pages > best && load[m] + cw[c] <= cap) { best = pages; chosen = m; }
    }
    if (chosen < 0) {
      chosen = cw[c] > 0 ? std::min_element(load.begin(), load.end()) - load.begin() : lpt[c];
    }
    assign[c] = static_cast<uint32_t>(chosen);
    load[chosen] += cw[c];
  }
  ReslicedMap out;
  out.proto = sliced.proto();
  out.cell_weight = std::move(cw);
  out.home = std::move(home);
  out.assign = std::move(assign);
  out.load = std::move(load);
  return out;
}

}  // namespace

StatusOr<RebalanceResult> Rebalance(const PartitionMap& old_map, const LengthSample& fresh, const RebalanceOptions& o) {
  if (fresh.dims() != old_map.dims()) {
    return InvalidArgument("the map has " + std::to_string(old_map.dims()) + " dimensions, the sample " +
                           std::to_string(fresh.dims()));
  }
  if (fresh.size() == 0) return FailedPrecondition("cannot rebalance from an empty sample");
  if (!(o.max_move >= 0 && o.max_move <= 1)) return InvalidArgument("max_move must be in [0, 1]");
  const auto feature = old_map.proto().feature();
  const uint32_t shards = old_map.shards();
  const double total = static_cast<double>(fresh.size());

  // The fresh sample under the old map.
  std::vector<uint32_t> old_home(fresh.size());
  std::vector<double> w(old_map.cells(), 0.0);
  for (size_t i = 0; i < fresh.size(); ++i) {
    old_home[i] = old_map.Home(fresh.Vector(i, feature));
    w[old_home[i]] += 1;
  }
  std::vector<uint32_t> old_shard(old_map.cells());
  for (uint32_t c = 0; c < old_map.cells(); ++c) old_shard[c] = old_map.ShardOf(c);

  RebalanceResult r{old_map};
  r.move_budget = o.max_move;
  r.imbalance_before = Imbalance(Loads(w, old_shard, shards));

  // Step 1.
  std::vector<uint32_t> shard_of = old_shard;
  // Single moves and swaps only: a compound exchange moves three or four cells for a small gain.
  RefineAssignment(w, &shard_of, shards,
                   {.move_budget = o.max_move * total, .target_imbalance = o.target_imbalance, .compound = false});
  const double step1 = Imbalance(Loads(w, shard_of, shards));
  pb::PartitionMap p = old_map.proto();
  p.set_generation(p.generation() + 1);
  p.set_sample_pages(fresh.size());

  std::vector<uint32_t> new_home = old_home;
  std::vector<uint32_t> new_shard_of_cell = shard_of;
  bool resliced = false;
  if (step1 > o.target_imbalance) {
    ASSIGN_OR_RETURN(ReslicedMap sliced, Reslice(old_map, fresh, old_home, old_shard, o.target_imbalance));
    const double resliced_imbalance = Imbalance(sliced.load);
    if (resliced_imbalance < step1) {
      resliced = true;
      p = std::move(sliced.proto);
      p.set_generation(old_map.proto().generation() + 1);
      p.mutable_cell_shard()->Assign(sliced.assign.begin(), sliced.assign.end());
      new_home = std::move(sliced.home);
      new_shard_of_cell = std::move(sliced.assign);
      w = std::move(sliced.cell_weight);
    }
  }
  if (!resliced) p.mutable_cell_shard()->Assign(shard_of.begin(), shard_of.end());
  p.mutable_cell_weight()->Assign(w.begin(), w.end());
  ASSIGN_OR_RETURN(PartitionMap out, PartitionMap::FromProto(std::move(p)));

  // Moves: pages whose shard changes, aggregated by (old cell, new cell).
  std::map<std::pair<uint32_t, uint32_t>, double> agg;
  double moved = 0;
  for (size_t i = 0; i < fresh.size(); ++i) {
    const uint32_t from = old_shard[old_home[i]], to = new_shard_of_cell[new_home[i]];
    if (from == to) continue;
    moved += 1;
    agg[{old_home[i], new_home[i]}] += 1;
  }
  r.map = std::move(out);
  r.resliced = resliced;
  r.imbalance_after = Imbalance(Loads(w, new_shard_of_cell, shards));
  r.moved_share = moved / total;
  for (const auto& [cells, pages] : agg) {
    r.moves.push_back(CellMove{cells.first, cells.second, old_shard[cells.first], new_shard_of_cell[cells.second], pages});
  }
  std::stable_sort(r.moves.begin(), r.moves.end(), [](const CellMove& a, const CellMove& b) { return a.pages > b.pages; });
  return r;
}

}  // namespace neardup::partitioner

namespace neardup::partitioner {

StatusOr<RebalanceResult> ReassignCells(const PartitionMap& old_map, const std::vector<double>& w, uint32_t shards,
                                        const RebalanceOptions& o) {
  if (shards == 0) return InvalidArgument("reassign: at least one shard is needed");
  if (w.size() != old_map.cells()) {
    return InvalidArgument("reassign: " + std::to_string(w.size()) + " cell weights for a map of " +
                           std::to_string(old_map.cells()) + " cells");
  }
  if (!(o.max_move >= 0 && o.max_move <= 1)) return InvalidArgument("max_move must be in [0, 1]");
  double total = 0;
  for (size_t c = 0; c < w.size(); ++c) {
    if (!(w[c] >= 0)) return InvalidArgument("reassign: cell " + std::to_string(c) + " has a negative weight");
    total += w[c];
  }
  const uint32_t cells = old_map.cells();
  std::vector<uint32_t> old_shard(cells);
  for (uint32_t c = 0; c < cells; ++c) old_shard[c] = old_map.ShardOf(c);
  RebalanceResult r{old_map};
  r.imbalance_before = Imbalance(Loads(w, old_shard, old_map.shards()));
  auto plan = [&](double budget) {
    return AssignWithin(w, old_shard, old_map.shards(), shards, total, o.target_imbalance, budget);
  };
  std::vector<uint32_t> shard_of = plan(o.max_move);
  r.move_budget = o.max_move;
  // A shard-count change takes the budget it needs: the least share (bisected to 1/4096) whose
  // plan reaches target_imbalance, or, when no budget does, the balance of the plan with no limit.
  constexpr double kSlack = 1e-9;
  if (shards != old_map.shards() && !o.resize_within_max_move && o.max_move < 1 &&
      Imbalance(Loads(w, shard_of, shards)) > o.target_imbalance + kSlack) {
    std::vector<uint32_t> free_hand = plan(1.0);
    const double goal = std::max(o.target_imbalance, Imbalance(Loads(w, free_hand, shards))) + kSlack;
    if (Imbalance(Loads(w, shard_of, shards)) > goal) {
      double lo = o.max_move, hi = 1.0;
      while (hi - lo > 1.0 / 4096) {
        const double mid = (lo + hi) / 2;
        std::vector<uint32_t> s = plan(mid);
        if (Imbalance(Loads(w, s, shards)) <= goal) {
          hi = mid;
          free_hand = std::move(s);
        } else {
          lo = mid;
        }
      }
      shard_of = std::move(free_hand);
      r.move_budget = hi;
    }
  }
  pb::PartitionMap p = old_map.proto();
  p.set_generation(p.generation() + 1);
  p.set_shards(shards);
  p.mutable_cell_shard()->Assign(shard_of.begin(), shard_of.end());
  p.mutable_cell_weight()->Assign(w.begin(), w.end());
  ASSIGN_OR_RETURN(r.map, PartitionMap::FromProto(std::move(p)));
  r.imbalance_after = Imbalance(Loads(w, shard_of, shards));
  double moved = 0;
  for (uint32_t c = 0; c < cells; ++c) {
    if (shard_of[c] == old_shard[c]) continue;
    moved += w[c];
    r.moves.push_back(CellMove{c, c, old_shard[c], shard_of[c], w[c]});
  }
  r.moved_share = total > 0 ? moved / total : 0;
  std::stable_sort(r.moves.begin(), r.moves.end(), [](const CellMove& a, const CellMove& b) { return a.pages > b.pages; });
  return r;
}

namespace {

// The cut that halves a cell's sample pages by their last length (at the median, or above the
// least value when more than half share it); nullopt when they all share one value.
std::optional<uint64_t> MedianCut(std::vector<uint64_t> values) {
  if (values.size() < 2) return std::nullopt;
  std::sort(values.begin(), values.end());
  uint64_t m = values[values.size() / 2];
  if (m == values.front()) {
    auto above = std::upper_bound(values.begin(), values.end(), values.front());
    if (above == values.end()) return std::nullopt;
    m = *above;
  }
  return m;
}

}  // namespace

StatusOr<RebalanceResult> ReassignOrSplitCells(const PartitionMap& old_map, const LengthSample& sample, uint32_t shards,
                                               const RebalanceOptions& o, uint32_t max_cells) {
  if (sample.dims() != old_map.dims()) {
    return InvalidArgument("the map has " + std::to_string(old_map.dims()) + " dimensions, the sample " +
                           std::to_string(sample.dims()));
  }
  if (sample.size() == 0) return FailedPrecondition("cannot rebalance from an empty sample");
  const auto feature = old_map.proto().feature();
  const uint32_t last = old_map.dims() - 1;
  std::vector<uint32_t> home(sample.size());
  auto weigh = [&](const PartitionMap& m) {
    std::vector<double> w(m.cells(), 0.0);
    for (size_t i = 0; i < sample.size(); ++i) {
      home[i] = m.Home(sample.Vector(i, feature));
      w[home[i]] += 1;
    }
    return w;
  };
  ASSIGN_OR_RETURN(RebalanceResult best, ReassignCells(old_map, weigh(old_map), shards, o));
  if (best.imbalance_after <= o.target_imbalance || shards == 0) return best;
  const double imbalance_before = best.imbalance_before;  // the sample under the old map
  const uint32_t per_shard = std::max(1u, old_map.proto().cells_per_shard());
  const uint32_t grain = shards * per_shard;
  if (max_cells == 0) max_cells = 2 * grain;

  // Cuts by cell of the old map; the split map is rebuilt from the old one after each cut.
  std::map<uint32_t, std::vector<uint64_t>> cuts, best_cuts;
  auto split = [&](const std::map<uint32_t, std::vector<uint64_t>>& at) -> StatusOr<PartitionMap> {
    std::vector<CellCut> list;
    for (const auto& [cell, values] : at) list.push_back({cell, values});
    return SplitCells(old_map, list);
  };
  PartitionMap refined = old_map;
  std::vector<double> w = weigh(refined);
  while (refined.cells() < max_cells) {
    // The heaviest cell that can be cut.
    std::vector<std::vector<uint64_t>> values(refined.cells());
    for (size_t i = 0; i < sample.size(); ++i) values[home[i]].push_back(sample.Vector(i, feature)[last]);
    std::vector<uint32_t> order(refined.cells());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return w[a] > w[b]; });
    std::optional<uint64_t> cut;
    uint32_t cell = 0;
    for (uint32_t c : order) {
      if ((cut = MedianCut(std::move(values[c])))) {
        cell = c;
        break;
      }
    }
    if (!cut) break;
    ASSIGN_OR_RETURN(const std::vector<uint32_t> parent, CellParents(refined, old_map));
    cuts[parent[cell]].push_back(*cut);
    ASSIGN_OR_RETURN(refined, split(cuts));
    w = weigh(refined);
    if (refined.cells() < grain) continue;
    ASSIGN_OR_RETURN(RebalanceResult r, ReassignCells(refined, w, shards, o));
    if (r.imbalance_after < best.imbalance_after - 1e-12) {
      best = std::move(r);
      best_cuts = cuts;
    }
    if (best.imbalance_after <= o.target_imbalance) break;
  }
  if (best_cuts.empty()) return best;

  // Cuts whose parts all ended on one shard move nothing a whole cell would not: drop them when
  // the assignment without them is as balanced.
  {
    ASSIGN_OR_RETURN(const std::vector<uint32_t> parent, CellParents(best.map, old_map));
    std::map<uint32_t, std::set<uint32_t>> shards_of;
    for (uint32_t c = 0; c < best.map.cells(); ++c) shards_of[parent[c]].insert(best.map.ShardOf(c));
    std::map<uint32_t, std::vector<uint64_t>> kept;
    for (const auto& [cell, values] : best_cuts) {
      if (shards_of[cell].size() > 1) kept[cell] = values;
    }
    if (kept.size() < best_cuts.size()) {
      ASSIGN_OR_RETURN(PartitionMap pruned, split(kept));
      ASSIGN_OR_RETURN(RebalanceResult r, ReassignCells(pruned, weigh(pruned), shards, o));
      if (r.imbalance_after <= best.imbalance_after + 1e-12) {
        best = std::move(r);
        best_cuts = std::move(kept);
      }
    }
  }
  ASSIGN_OR_RETURN(const std::vector<uint32_t> parent, CellParents(best.map, old_map));
  best.resliced = !best_cuts.empty();
  best.cells_split = static_cast<uint32_t>(best_cuts.size());
  best.imbalance_before = imbalance_before;
  for (CellMove& m : best.moves) m.from_cell = parent[m.to_cell];
  return best;
}

}  // namespace neardup::partitioner
