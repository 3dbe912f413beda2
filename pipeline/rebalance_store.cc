// RebalanceStore and the move it makes (pipeline/rebalance_store.h).
#include "pipeline/rebalance_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "common/json_write.h"
#include "common/url_hash_map.h"
#include "partitioner/map_builder.h"
#include "pipeline/placement.h"
#include "pipeline/store_sizing.h"
#include "storage/file_env.h"

namespace neardup::pipeline {
namespace fs = std::filesystem;
namespace {

constexpr size_t kMaxListed = 100;

double ImbalanceOf(const std::vector<uint64_t>& pages) {
  std::vector<double> load(pages.begin(), pages.end());
  return partitioner::Imbalance(load);
}

// Calls fn(url, cell) for every Tier 1 page with a signature in Tier 2.
Status ForEachResident(const tier1::GroupStore& groups, const std::function<Status(std::string_view, uint32_t)>& fn) {
  Status inner;
  RETURN_IF_ERROR(groups.rows().ScanFamily(groups.page_family(), [&](std::string_view url, std::string_view,
                                                                     std::string_view v) {
    pb::Tier1Page p;
    if (!p.ParseFromArray(v.data(), static_cast<int>(v.size()))) {
      inner = Corruption("group store: unreadable page record of " + std::string(url));
      return false;
    }
    if (!p.has_signature()) return true;
    inner = fn(url, p.home_cell());
    return inner.ok();
  }));
  return inner;
}

// One shard's write of a move step: stage `pages` (home here), publish them with `removed`, commit.
Status WriteStep(ShardSet* shards, uint32_t shard, std::span<const tier2::ShardPage> pages,
                 std::span<const std::string> removed, uint64_t sequence) {
  RETURN_IF_ERROR(shards->Stage(shard, pages));
  if (Status s = shards->Publish(shard, removed, sequence); !s.ok()) {
    shards->Drop(shard);
    return s;
  }
  return shards->Commit(shard);
}

ShardSetOptions ShardOptionsFor(const StoreLayout& layout, pb::NeardupConfig config, uint32_t shards) {
  ShardSetOptions so;
  so.layout = layout;
  config.mutable_pipeline()->set_shards(shards);
  so.config = std::move(config);
  so.shards = shards;
  return so;
}


}  // namespace

StoreMove::StoreMove(const StoreLayout& layout, tier1::GroupStore* groups, Placement* placement, StoreMoveOptions o)
    : layout_(layout), groups_(groups), state_(layout, groups), placement_(placement), o_(std::move(o)) {
  if (o_.step_pages == 0) o_.step_pages = 10000;
  if (placement_->map().cells() > placement_->before().cells()) phase_ = Phase::kRelabel;
  if (placement_->flipped()) phase_ = Phase::kRename;
}

StatusOr<std::unique_ptr<StoreMove>> StoreMove::Open(const StoreLayout& layout, tier1::GroupStore* groups,
                                                     Placement* placement, StoreMoveOptions options) {
  if (!placement->moving()) return NotFound("store " + layout.dir + " records no move");
  return std::unique_ptr<StoreMove>(new StoreMove(layout, groups, placement, std::move(options)));
}

bool StoreMove::Due(double* wait_seconds) const {
  *wait_seconds = 0;
  if (phase_ != Phase::kCopy || o_.max_mb_per_s <= 0 || !listed_) return true;
  const double due = static_cast<double>(copied_bytes_) / (o_.max_mb_per_s * 1e6);
  const double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - copy_start_).count();
  if (due <= now) return true;
  *wait_seconds = due - now;
  return false;
}

Status StoreMove::Durable() {
  ++counts_.steps;
  if (o_.on_step && !o_.on_step(counts_.steps)) {
    return Unavailable(fmt::format("move: stopped after step {} (a later rebalance or run finishes it)", counts_.steps));
  }
  return Status::Ok();
}

Status StoreMove::Step(ShardSet* shards, uint64_t sequence) {
  if (shards->size() < placement_->shard_count()) {
    return InvalidArgument(
        fmt::format("move: {} shards open, the move spans {}", shards->size(), placement_->shard_count()));
  }
  const auto t0 = std::chrono::steady_clock::now();
  Status s;
  switch (phase_) {
    case Phase::kRelabel: s = RelabelStep(shards); break;
    case Phase::kCopy: s = CopyStep(shards, sequence); break;
    case Phase::kFlip: s = Flip(); break;
    case Phase::kRename: {
      phase_ = Phase::kDrop;
      bool renamed = false;
      s = placement_->Rename(&state_, &renamed);
      if (s.ok() && renamed) s = Durable();
      break;
    }
    case Phase::kDrop: s = DropStep(shards, sequence); break;
    case Phase::kEnd: s = End(); break;
    case Phase::kDone: break;
  }
  counts_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

Status StoreMove::Finish(ShardSet* shards, uint64_t sequence) {
  while (!done()) {
    double wait = 0;
    if (!Due(&wait)) {
      std::this_thread::sleep_for(std::chrono::duration<double>(wait));
      counts_.throttled_seconds += wait;
    }
    RETURN_IF_ERROR(Step(shards, sequence));
  }
  return Status::Ok();
}

Status StoreMove::DrawList(uint64_t sequence, bool by_destination) {
  list_.clear();
  const bool relabel = phase_ == Phase::kRelabel;
  const Placement& p = *placement_;
  RETURN_IF_ERROR(ForEachResident(*groups_, [&](std::string_view url, uint32_t cell) -> Status {
    if (cell >= p.map().cells()) return Corruption(fmt::format("page {} is in cell {}, outside the map", url, cell));
    if (relabel) {
      if (cell < p.before().cells() && p.Split(cell)) list_.push_back({p.OldShard(cell), cell, std::string(url)});
      return Status::Ok();
    }
    const uint32_t from = p.OldShard(cell), to = p.after().ShardOf(cell);
    if (from != to) list_.push_back({from, to, std::string(url)});
    return Status::Ok();
  }));
  // The steps take the list in runs of one shard: the copy's by destination, the drop's by source.
  std::sort(list_.begin(), list_.end(), [by_destination](const Entry& a, const Entry& b) {
    const uint32_t x = by_destination ? a.to : a.from, y = by_destination ? b.to : b.from;
    return x != y ? x < y : a.url < b.url;
  });
  listed_ = true;
  next_ = 0;
  listed_at_ = sequence;
  return Status::Ok();
}

void StoreMove::EndListIfDone(Phase next) {
  if (next_ < list_.size()) return;
  phase_ = next;
  list_.clear();
  list_.shrink_to_fit();
  listed_ = false;
}

// Step 1b, when cells were split: the next source's pages in split cells get the part their
// signature falls in, in one Tier 1 commit. A page a batch stored since the list was drawn has its
// part already (the batch placed it on the new map); one read again gets the same part.
Status StoreMove::RelabelStep(ShardSet* shards) {
  if (!listed_) RETURN_IF_ERROR(DrawList(0, /*by_destination=*/false));
  std::vector<std::string> urls;
  std::vector<uint32_t> cells;
  uint32_t from = 0;
  while (next_ < list_.size() && urls.size() < o_.step_pages) {
    const Entry& e = list_[next_];
    if (!urls.empty() && e.from != from) break;
    ++next_;
    from = e.from;
    urls.push_back(e.url);
    cells.push_back(e.to);  // the relabel's entries name the split cell
  }
  if (!urls.empty()) {
    std::vector<std::optional<pb::PageSignature>> got;
    RETURN_IF_ERROR(shards->GetMany(from, urls, &got));
    tier1::GroupStore::Txn txn(groups_);
    uint64_t changed = 0;
    const partitioner::PartitionMap& after = placement_->after();
    const bool counts = after.proto().feature() == pb::PartitionMap::SHINGLE_COUNTS;
    for (size_t i = 0; i < urls.size(); ++i) {
      ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn.FindPage(urls[i]));
      // A batch since the list was drawn placed the page in the new map's cells itself.
      if (p == nullptr || !p->has_signature() || p->home_cell() != cells[i]) continue;
      if (!got[i].has_value()) {
        return FailedPrecondition(fmt::format("move: page {} is not on its shard {}", urls[i], from));
      }
      const auto& v = counts ? got[i]->shingle_vector() : got[i]->length_vector();
      if (static_cast<uint32_t>(v.size()) != after.dims()) {
        return Corruption(fmt::format("move: the signature of {} has {} lengths, the map {}", urls[i], v.size(), after.dims()));
      }
      const uint32_t part = after.Home(std::span<const uint32_t>(v.data(), v.size()));
      if (part == p->home_cell()) continue;
      if (placement_->ParentCell(part) != p->home_cell()) {
        return Corruption(fmt::format("move: page {} of cell {} falls in cell {} of the new map", urls[i], p->home_cell(), part));
      }
      ASSIGN_OR_RETURN(pb::Tier1Page* m, txn.MutablePage(urls[i]));
      m->set_home_cell(part);
      ++changed;
    }
    if (changed > 0) {
      RETURN_IF_ERROR(txn.Commit());
      counts_.pages_relabelled += changed;
    }
    RETURN_IF_ERROR(Durable());
  }
  EndListIfDone(Phase::kCopy);
  return Status::Ok();
}

// Step 2: the next destination's next pages, read from their source shards (one call each).
Status StoreMove::CopyStep(ShardSet* shards, uint64_t sequence) {
  if (!listed_) {
    RETURN_IF_ERROR(DrawList(sequence, /*by_destination=*/true));
    copy_start_ = std::chrono::steady_clock::now();
    copied_bytes_ = 0;
  }
  const bool recheck = sequence != listed_at_;
  std::map<uint32_t, std::vector<std::string>> by_source;
  size_t taken = 0;
  uint32_t to = 0;
  while (next_ < list_.size() && taken < o_.step_pages) {
    const Entry& e = list_[next_];
    if (taken > 0 && e.to != to) break;
    ++next_;
    if (recheck) {
      // A batch since the list was drawn may have moved the page out of its moving cell (the
      // batch wrote its new place itself) or removed it.
      pb::Tier1Page p;
      Status got = groups_->GetPage(e.url, &p);
      if (got.code() == StatusCode::kNotFound) continue;
      RETURN_IF_ERROR(got);
      if (!p.has_signature() || p.home_cell() >= placement_->after().cells() ||
          placement_->OldShard(p.home_cell()) != e.from || placement_->after().ShardOf(p.home_cell()) != e.to) {
        continue;
      }
    }
    to = e.to;
    ++taken;
    by_source[e.from].push_back(e.url);
  }
  std::vector<pb::PageSignature> sigs;
  sigs.reserve(taken);
  uint64_t bytes = 0;
  std::vector<std::optional<pb::PageSignature>> got;
  for (const auto& [from, urls] : by_source) {
    RETURN_IF_ERROR(shards->GetMany(from, urls, &got));
    for (size_t i = 0; i < urls.size(); ++i) {
      if (!got[i].has_value()) {
        return FailedPrecondition(fmt::format("move: page {} is not on its shard {}", urls[i], from));
      }
      bytes += got[i]->ByteSizeLong();
      sigs.push_back(std::move(*got[i]));
    }
  }
  if (!sigs.empty()) {
    std::vector<tier2::ShardPage> pages(sigs.size());
    for (size_t i = 0; i < pages.size(); ++i) pages[i] = {&sigs[i], /*home=*/true, /*validated=*/true};
    RETURN_IF_ERROR(WriteStep(shards, to, pages, {}, sequence));
    copied_bytes_ += bytes;
    counts_.pages_moved += sigs.size();
    counts_.bytes_moved += bytes;
    placement_->CountMoved(sigs.size(), bytes);
    RETURN_IF_ERROR(Durable());
  }
  EndListIfDone(Phase::kFlip);
  return Status::Ok();
}

// Step 3: the parameters name the new map, and the journal says DROP, in one commit.
Status StoreMove::Flip() {
  RETURN_IF_ERROR(placement_->Flip(&state_));
  phase_ = Phase::kRename;
  return Durable();
}

// Step 4: the sources drop what left them.
Status StoreMove::DropStep(ShardSet* shards, uint64_t sequence) {
  if (!listed_) RETURN_IF_ERROR(DrawList(sequence, /*by_destination=*/false));
  const bool recheck = sequence != listed_at_;
  std::vector<std::string> urls;
  uint32_t from = 0;
  while (next_ < list_.size() && urls.size() < o_.step_pages) {
    const Entry& e = list_[next_];
    if (!urls.empty() && e.from != from) break;
    ++next_;
    if (recheck) {
      // A batch since the list was drawn may have put the page in a cell the source holds now.
      pb::Tier1Page p;
      Status got = groups_->GetPage(e.url, &p);
      if (got.ok() && p.has_signature() && p.home_cell() < placement_->after().cells() &&
          placement_->after().ShardOf(p.home_cell()) == e.from) {
        continue;
      }
      if (!got.ok() && got.code() != StatusCode::kNotFound) return got;
    }
    from = e.from;
    urls.push_back(e.url);
  }
  if (!urls.empty()) {
    RETURN_IF_ERROR(WriteStep(shards, from, {}, urls, sequence));
    counts_.pages_dropped += urls.size();
    RETURN_IF_ERROR(Durable());
  }
  EndListIfDone(Phase::kEnd);
  return Status::Ok();
}

// The end: drained shards' directories (when not the caller's to remove), the journal, map-prev.pb.
Status StoreMove::End() {
  if (o_.remove_drained) RETURN_IF_ERROR(RemoveDrainedShards(layout_, placement_->journal().shards_after()));
  RETURN_IF_ERROR(placement_->End(&state_));
  phase_ = Phase::kDone;
  return Status::Ok();
}

Status RemoveDrainedShards(const StoreLayout& layout, uint32_t from) {
  for (uint32_t m = from; fs::exists(layout.shard(m)); ++m) {
    std::error_code ec;
    fs::remove_all(layout.shard(m), ec);
    if (ec) return IoError("move: cannot remove drained shard " + layout.shard(m) + ": " + ec.message());
  }
  return Status::Ok();
}

namespace {

StatusOr<std::unique_ptr<ShardSet>> OpenShards(const ShardSetOpener& open, const ShardSetOptions& so) {
  ASSIGN_OR_RETURN(std::unique_ptr<ShardSet> set, open ? open(so) : OpenLocalShardSet(so));
  if (set == nullptr || set->size() != so.shards) {
    return FailedPrecondition(fmt::format("move: the shard set opened for {} has {} shards, not {}", so.layout.dir,
                                          set == nullptr ? 0 : set->size(), so.shards));
  }
  return set;
}

// The length vectors of the resident pages whose URL hash is at most `cut`, read from their
// shards under `map`. FailedPrecondition for a page its shard does not hold.
StatusOr<partitioner::LengthSample> SampleVectors(const tier1::GroupStore& groups, const partitioner::PartitionMap& map,
                                                  const ShardSet& shards, uint64_t cut) {
  std::vector<std::vector<std::string>> urls(map.shards());
  RETURN_IF_ERROR(ForEachResident(groups, [&](std::string_view url, uint32_t cell) -> Status {
    if (cell < map.cells() && UrlHash(url) <= cut) urls[map.ShardOf(cell)].emplace_back(url);
    return Status::Ok();
  }));
  partitioner::LengthSample sample(map.dims());
  std::vector<std::optional<pb::PageSignature>> got;
  for (uint32_t m = 0; m < map.shards(); ++m) {
    for (size_t at = 0; at < urls[m].size(); at += 10000) {
      const std::span<const std::string> chunk(urls[m].data() + at, std::min<size_t>(10000, urls[m].size() - at));
      RETURN_IF_ERROR(shards.GetMany(m, chunk, &got));
      for (size_t i = 0; i < chunk.size(); ++i) {
        if (!got[i].has_value()) return FailedPrecondition(fmt::format("rebalance: page {} is not on its shard {}", chunk[i], m));
        const auto& w = got[i]->length_vector();
        const auto& c = got[i]->shingle_vector();
        if (static_cast<uint32_t>(w.size()) != map.dims() || static_cast<uint32_t>(c.size()) != map.dims()) {
          return Corruption(fmt::format("rebalance: the signature of {} has {} lengths, the map {}", chunk[i], c.size(), map.dims()));
        }
        sample.Add(std::span<const uint32_t>(w.data(), w.size()), std::span<const uint32_t>(c.data(), c.size()));
      }
    }
  }
  return sample;
}

}  // namespace

StatusOr<uint64_t> CommittedBatches(const tier1::GroupStore& groups) {
  std::string bytes;
  Status s = groups.rows().Get(groups.meta_family(), "progress", "", &bytes);
  if (s.code() == StatusCode::kNotFound) return uint64_t{0};
  RETURN_IF_ERROR(s);
  pb::Tier1Progress p;
  if (!p.ParseFromString(bytes)) return Corruption("group store: unreadable progress record");
  return p.batches_committed();
}

StatusOr<std::vector<LaggingShard>> LaggingShards(const tier1::GroupStore& groups, const ShardSet& shards,
                                                  uint32_t count) {
  ASSIGN_OR_RETURN(const uint64_t batches, CommittedBatches(groups));
  std::vector<LaggingShard> out;
  for (uint32_t m = 0; m < count; ++m) {
    ASSIGN_OR_RETURN(const uint64_t seq, shards.CommittedBatch(m));
    if (seq < batches) out.push_back({m, fmt::format("shard {} has committed batch {} of Tier 1's {}", m, seq, batches)});
  }
  return out;
}


double PlannedImbalance(const partitioner::PartitionMap& map) {
  const auto& w = map.proto().cell_weight();
  if (w.empty()) return 1;
  std::vector<double> load(map.shards(), 0.0);
  for (uint32_t c = 0; c < map.cells(); ++c) load[map.ShardOf(c)] += w[static_cast<int>(c)];
  return partitioner::Imbalance(load);
}

namespace {

// FinishInterruptedMove with the shards already open (`shards`, taken over and closed before the
// drained shards' directories go), or opened here (null).
Status FinishMove(const StoreLayout& layout, tier1::GroupStore* groups, const pb::NeardupConfig& config,
                  const ShardSetOpener& open, std::unique_ptr<ShardSet> shards, bool* finished,
                  StoreRebalanceReport* report, const std::function<bool(uint64_t)>& on_step, double max_mb_per_s) {
  *finished = false;
  StorePlacementState state(layout, groups);
  auto journal = ReadMoveJournal(state);
  if (journal.status().code() == StatusCode::kNotFound) {
    // A move that never committed its journal leaves its new map behind: forget it.
    state.RemoveMap(MapFile::kNext);
    // A move that ended before its drained shards' directories went leaves them behind.
    if (auto params = ReadStoreParams(*groups); params.ok() && params->shards() > 0) {
      RETURN_IF_ERROR(RemoveDrainedShards(layout, params->shards()));
    }
    return Status::Ok();
  }
  RETURN_IF_ERROR(journal.status());
  const pb::MoveJournal& j = *journal;
  ASSIGN_OR_RETURN(uint64_t sequence, CommittedBatches(*groups));
  spdlog::info("rebalance: move of store {} from map generation {} to {}: {}", layout.dir,
               j.generation_before(), j.generation_after(),
               j.state() == pb::MoveJournal::COPY ? "copying to the new shards" : "flipped; dropping from the old shards");
  const uint32_t count = std::max(j.shards_before(), j.shards_after());
  if (shards == nullptr || shards->size() != count) {
    shards.reset();
    ASSIGN_OR_RETURN(shards, OpenShards(open, ShardOptionsFor(layout, config, count)));
  }
  {
    StoreMoveOptions mo;
    mo.step_pages = config.tier2().max_batch_pages() > 0 ? std::min<uint32_t>(config.tier2().max_batch_pages(), 10000) : 10000;
    mo.max_mb_per_s = max_mb_per_s;
    mo.on_step = on_step;
    // The drained shards go once the set is closed (below).
    mo.remove_drained = false;
    ASSIGN_OR_RETURN(std::unique_ptr<Placement> placement, Placement::Load(state));
    ASSIGN_OR_RETURN(std::unique_ptr<StoreMove> move, StoreMove::Open(layout, groups, placement.get(), std::move(mo)));
    Status moved = move->Finish(shards.get(), sequence);
    if (report != nullptr) {
      report->steps += move->counts().steps;
      report->pages_moved += move->counts().pages_moved;
      report->pages_relabelled += move->counts().pages_relabelled;
      report->bytes_moved += move->counts().bytes_moved;
      report->throttled_seconds += move->counts().throttled_seconds;
    }
    RETURN_IF_ERROR(moved);
  }
  shards.reset();
  RETURN_IF_ERROR(RemoveDrainedShards(layout, j.shards_after()));
  if (report != nullptr) {
    report->resumed = true;
    report->generation_before = j.generation_before();
    report->generation_after = j.generation_after();
    report->shards_before = j.shards_before();
    report->shards_after = j.shards_after();
    report->estimated_pages = j.estimated_pages();
  }
  *finished = true;
  return Status::Ok();
}

}  // namespace

Status FinishInterruptedMove(const StoreLayout& layout, tier1::GroupStore* groups, const pb::NeardupConfig& config,
                             const ShardSetOpener& open, bool* finished, StoreRebalanceReport* report,
                             const std::function<bool(uint64_t)>& on_step) {
  return FinishMove(layout, groups, config, open, nullptr, finished, report, on_step, /*max_mb_per_s=*/0);
}

Status CheckRebalanceOptions(const StoreRebalanceOptions& o) {
  if (!(o.max_move >= 0 && o.max_move <= 1)) return InvalidArgument("--max-move must be in [0, 1]");
  if (!(o.sample_rate > 0 && o.sample_rate <= 1)) return InvalidArgument("--sample-rate must be in (0, 1]");
  if (!(o.target_imbalance >= 1)) return InvalidArgument("--target-imbalance must be at least 1");
  if (o.shards > 1024) return InvalidArgument("--shards must be in 1..1024");
  return Status::Ok();
}

StatusOr<StoreRebalanceReport> RebalanceStore(const StoreRebalanceOptions& o) {
  RETURN_IF_ERROR(CheckRebalanceOptions(o));
  StoreLayout layout{o.dir};
  std::error_code ec;
  if (!fs::exists(layout.tier1() + "/CURRENT", ec)) {
    return NotFound("no store in " + o.dir + " (expected its group store in " + layout.tier1() + ")");
  }
  tier1::GroupStore::Options go = GroupStoreOptionsFor(layout, o.config);
  go.async_writes = false;  // each step of the move is committed before the next reads
  go.read_only = o.dry_run;
  ASSIGN_OR_RETURN(std::unique_ptr<tier1::GroupStore> groups, tier1::GroupStore::Open(go));
  return RebalanceOpenStore(groups.get(), o);
}

namespace {

// A rebalance of one store: its options, its group store, and the shards it opens once.
struct StoreRebalance {
  const StoreRebalanceOptions& o;
  tier1::GroupStore* groups;
  StoreLayout layout;
  pb::NeardupConfig config;       // the store's parameters applied
  std::chrono::steady_clock::time_point start;
  std::unique_ptr<ShardSet> shards;

  double Seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
  // The directories of shards `from` to `to` - 1, created for a move that is not made.
  void RemoveAdded(uint32_t from, uint32_t to) const {
    std::error_code ec;
    for (uint32_t added = from; added < to; ++added) fs::remove_all(layout.shard(added), ec);
  }
  // The shards, opened once (new ones created: `count` of them) for the move, or before it to read
  // the sample's signatures for re-slicing (read-only on a dry run, the map's only). Every shard
  // must hold every batch Tier 1 committed (`sequence`): else a batch's pages are not where Tier 1
  // says.
  Status OpenShardsOnce(const partitioner::PartitionMap& map, uint32_t count, uint64_t sequence) {
    if (shards != nullptr) return Status::Ok();
    ShardSetOptions so = ShardOptionsFor(layout, config, o.dry_run ? map.shards() : count);
    so.read_only = o.dry_run;
    ASSIGN_OR_RETURN(shards, OpenShards(o.open_shards, so));
    for (uint32_t m = 0; m < map.shards() && sequence > 0; ++m) {
      ASSIGN_OR_RETURN(uint64_t seq, shards->CommittedBatch(m));
      if (seq < sequence) {
        shards.reset();
        if (!o.dry_run) RemoveAdded(map.shards(), count);
        return FailedPrecondition(fmt::format(
            "store {}: shard {} has batch {} of {}: the last run was interrupted before its shards committed; run "
            "its input again (neardup run) first",
            o.dir, m, seq, sequence));
      }
    }
    return Status::Ok();
  }
};

// The move an interrupted rebalance recorded, finished first, as this rebalance's report (a new
// plan would start over): the served map's shards' resident pages after it.
StatusOr<StoreRebalanceReport> ReportFinishedMove(const StoreRebalance& r, StoreRebalanceReport report) {
  ASSIGN_OR_RETURN(std::unique_ptr<Placement> placement, Placement::Load(StorePlacementState(r.layout, r.groups)));
  const partitioner::PartitionMap& map = placement->served();
  std::vector<uint64_t> pages(map.shards(), 0);
  RETURN_IF_ERROR(ForEachResident(*r.groups, [&](std::string_view, uint32_t cell) {
    if (cell < map.cells()) ++pages[map.ShardOf(cell)];
    ++report.resident_pages;
    return Status::Ok();
  }));
  report.shard_pages_after = pages;
  report.imbalance_after = ImbalanceOf(pages);
  report.applied = true;
  report.seconds = r.Seconds();
  return report;
}

// The cells weighed: every resident page counted, a sample of them (by URL hash) for the plan.
struct CellWeights {
  std::vector<uint64_t> pages;    // resident pages per cell
  std::vector<double> sampled;    // sampled pages per cell
  uint64_t resident = 0, sampled_pages = 0;
  double rate = 0;                // the sample's share of the pages
  uint64_t cut = 0;               // a page is sampled when its URL hash is at most this
};

StatusOr<CellWeights> WeighCells(const tier1::GroupStore& groups, const partitioner::PartitionMap& map,
                                 const StoreRebalanceOptions& o) {
  CellWeights w;
  w.pages.assign(map.cells(), 0);
  std::vector<std::pair<uint32_t, uint64_t>> pages;  // (cell, URL hash) of every resident page: one scan
  RETURN_IF_ERROR(ForEachResident(groups, [&](std::string_view url, uint32_t cell) -> Status {
    if (cell >= map.cells()) return Corruption(fmt::format("page {} is in cell {}, outside the map", url, cell));
    ++w.pages[cell];
    pages.emplace_back(cell, UrlHash(url));
    return Status::Ok();
  }));
  w.resident = pages.size();
  if (w.resident == 0) return FailedPrecondition("store " + o.dir + " holds no pages to rebalance");
  w.rate = std::min(1.0, std::max(o.sample_rate, 20000.0 / static_cast<double>(w.resident)));
  w.cut = w.rate >= 1 ? ~uint64_t{0} : static_cast<uint64_t>(w.rate * 18446744073709551615.0);
  w.sampled.assign(map.cells(), 0.0);
  for (const auto& [cell, hash] : pages) {
    if (hash <= w.cut) {
      w.sampled[cell] += 1;
      ++w.sampled_pages;
    }
  }
  return w;
}

// When whole cells leave the plan past the target: the sampled pages' signatures read, and the
// heaviest cells split, if that balances better. *plan_pages: pages per cell of the plan's map
// (exact for whole cells, a split cell's by its sample share); *cells_split.
Status ResliceIfBetter(StoreRebalance& r, const partitioner::PartitionMap& map, const CellWeights& w, uint32_t shards_after,
                       uint32_t count, uint64_t sequence, partitioner::RebalanceResult* plan,
                       std::vector<double>* plan_pages, uint32_t* cells_split) {
  const partitioner::RebalanceOptions ro{.max_move = r.o.max_move, .target_imbalance = r.o.target_imbalance};
  RETURN_IF_ERROR(r.OpenShardsOnce(map, count, sequence));
  ASSIGN_OR_RETURN(partitioner::LengthSample vectors, SampleVectors(*r.groups, map, *r.shards, w.cut));
  ASSIGN_OR_RETURN(partitioner::RebalanceResult split, partitioner::ReassignOrSplitCells(map, vectors, shards_after, ro));
  if (!split.resliced || split.imbalance_after >= plan->imbalance_after) return Status::Ok();
  ASSIGN_OR_RETURN(const std::vector<uint32_t> parent, partitioner::CellParents(split.map, map));
  std::vector<double> part_w(split.map.cells(), 0.0), parent_w(map.cells(), 0.0);
  for (size_t i = 0; i < vectors.size(); ++i) {
    const uint32_t c = split.map.Home(vectors.Vector(i, map.proto().feature()));
    part_w[c] += 1;
    parent_w[parent[c]] += 1;
  }
  plan_pages->assign(split.map.cells(), 0.0);
  for (uint32_t c = 0; c < split.map.cells(); ++c) {
    const uint32_t up = parent[c];
    (*plan_pages)[c] = parent_w[up] > 0 ? static_cast<double>(w.pages[up]) * part_w[c] / parent_w[up]
                       : c == up       ? static_cast<double>(w.pages[up])
                                       : 0.0;
  }
  *cells_split = split.cells_split;
  *plan = std::move(split);
  return Status::Ok();
}

// Why the plan misses its target, or ends above the imbalance before, if it does (empty otherwise).
std::string PlanNote(const StoreRebalanceOptions& o, const StoreRebalanceReport& report, uint32_t shards_before) {
  std::string note;
  if (!report.target_reached) {
    if (report.shards_after == shards_before) {
      note = fmt::format("target {:.2f} out of reach: moves and swaps within --max-move {:.2f} reach {:.3f} on the sample{}",
                         o.target_imbalance, o.max_move, report.planned_imbalance,
                         o.reslice ? "" : " (--no-reslice: whole cells only)");
    } else {
      note = fmt::format(
          "target {:.2f} out of reach: no move budget gets {} -> {} shards below {:.3f} on the sample with {}",
          o.target_imbalance, shards_before, report.shards_after, report.planned_imbalance,
          !o.reslice ? "whole cells (--no-reslice)" : report.cells_split > 0 ? "these cells, split ones included"
                                                                              : "these cells (none could be split)");
    }
  }
  if (report.imbalance_after > report.imbalance_before + 1e-9) {
    note += fmt::format("{}the imbalance after ({:.3f}, {} shards) is above the one before ({:.3f}, {} shards)",
                        note.empty() ? "" : "; ", report.imbalance_after, report.shards_after,
                        report.imbalance_before, shards_before);
  }
  return note;
}

// The plan's report: the pages per shard before and after, the imbalances, the target, the note
// and the moves (by pages, largest first).
void ReportPlan(const StoreRebalanceOptions& o, const partitioner::PartitionMap& map, const CellWeights& w,
                const partitioner::RebalanceResult& plan, const std::vector<double>& plan_pages, uint32_t shards_after,
                StoreRebalanceReport* report) {
  report->generation_before = map.proto().generation();
  report->shards_before = map.shards();
  report->shards_after = shards_after;
  report->resident_pages = w.resident;
  report->sampled_pages = w.sampled_pages;
  report->sample_rate = w.rate;
  report->shard_pages_before.assign(map.shards(), 0);
  report->shard_pages_after.assign(shards_after, 0);
  for (uint32_t c = 0; c < map.cells(); ++c) report->shard_pages_before[map.ShardOf(c)] += w.pages[c];
  std::vector<double> after(shards_after, 0.0);
  for (uint32_t c = 0; c < plan.map.cells(); ++c) after[plan.map.ShardOf(c)] += plan_pages[c];
  for (uint32_t m = 0; m < shards_after; ++m) report->shard_pages_after[m] = static_cast<uint64_t>(std::llround(after[m]));
  report->imbalance_before = ImbalanceOf(report->shard_pages_before);
  report->imbalance_after = ImbalanceOf(report->shard_pages_after);
  report->max_move = o.max_move;
  report->move_budget = plan.move_budget;
  report->target_imbalance = o.target_imbalance;
  report->planned_imbalance = plan.imbalance_after;
  report->target_reached = plan.imbalance_after <= o.target_imbalance + 1e-9;
  report->note = PlanNote(o, *report, map.shards());
  if (report->move_budget > o.max_move + 1e-12) {
    spdlog::info("rebalance: store {}: {} -> {} shards needs a move budget of {:.3f} of the pages to reach {:.2f} "
                 "(--max-move {:.2f})",
                 o.dir, map.shards(), shards_after, report->move_budget, o.target_imbalance, o.max_move);
  }
  if (!report->note.empty()) spdlog::warn("rebalance: store {}: {}", o.dir, report->note);
  for (partitioner::CellMove m : plan.moves) {
    report->estimated_pages += m.pages / w.rate;
    m.pages = plan_pages[m.to_cell];
    report->planned_pages += static_cast<uint64_t>(std::llround(m.pages));
    report->moves.push_back(m);
  }
  std::stable_sort(report->moves.begin(), report->moves.end(),
                   [](const partitioner::CellMove& a, const partitioner::CellMove& b) { return a.pages > b.pages; });
}

// Step 1 (both maps beside each other, then the journal), and unless deferred, steps 2-4.
StatusOr<StoreRebalanceReport> MakeMove(StoreRebalance& r, const partitioner::PartitionMap& map,
                                        const partitioner::PartitionMap& next, StoreRebalanceReport report) {
  const StoreRebalanceOptions& o = r.o;
  pb::MoveJournal j;
  j.set_state(pb::MoveJournal::COPY);
  j.set_generation_before(map.proto().generation());
  j.set_generation_after(next.proto().generation());
  j.set_digest_before(MapDigest(map));
  j.set_digest_after(MapDigest(next));
  j.set_shards_before(map.shards());
  j.set_shards_after(report.shards_after);
  j.set_estimated_pages(report.estimated_pages);
  StorePlacementState state(r.layout, r.groups);
  RETURN_IF_ERROR(Placement::BeginMove(&state, map, next, j, r.config.tier1().sync()));
  report.steps = 1;
  if (o.on_step && !o.on_step(0)) return Unavailable("move: stopped after writing its journal (a later rebalance or run finishes it)");
  report.generation_after = j.generation_after();
  report.applied = true;
  if (o.defer_move) {
    // The store's next run moves the pages between its batches.
    report.deferred = true;
    report.seconds = r.Seconds();
    return report;
  }
  spdlog::info("rebalance: moving {} cells ({} pages) of store {}: map generation {} -> {}, {} -> {} shards",
               report.moves.size(), report.planned_pages, o.dir, j.generation_before(), j.generation_after(),
               j.shards_before(), j.shards_after());
  StoreRebalanceReport moved;
  bool finished = false;
  RETURN_IF_ERROR(FinishMove(r.layout, r.groups, r.config, o.open_shards, std::move(r.shards), &finished, &moved,
                             o.on_step, o.max_mb_per_s));
  report.pages_moved = moved.pages_moved;
  report.pages_relabelled = moved.pages_relabelled;
  report.bytes_moved = moved.bytes_moved;
  report.planned_bytes = moved.bytes_moved;
  report.steps += moved.steps;
  report.throttled_seconds = moved.throttled_seconds;
  report.seconds = r.Seconds();
  return report;
}

}  // namespace

StatusOr<StoreRebalanceReport> RebalanceOpenStore(tier1::GroupStore* groups, const StoreRebalanceOptions& o) {
  StoreRebalance r{o, groups, StoreLayout{o.dir}, o.config, std::chrono::steady_clock::now(), nullptr};
  RETURN_IF_ERROR(CheckRebalanceOptions(o));
  auto params_or = ReadStoreParams(*groups);
  if (params_or.status().code() == StatusCode::kNotFound) {
    return FailedPrecondition("store " + o.dir + " records no parameters: it holds nothing yet");
  }
  RETURN_IF_ERROR(params_or.status());
  double threshold = 0;
  SignerOptions signer;
  ApplyParams(*params_or, &r.config, &threshold, &signer);

  StoreRebalanceReport report;
  report.dry_run = o.dry_run;
  if (!o.dry_run) {
    bool finished = false;
    RETURN_IF_ERROR(FinishMove(r.layout, groups, r.config, o.open_shards, nullptr, &finished, &report, o.on_step,
                               o.max_mb_per_s));
    if (finished) return ReportFinishedMove(r, std::move(report));
  } else if (ReadMoveJournal(*groups).ok()) {
    return FailedPrecondition("store " + o.dir + " has an interrupted move: run neardup rebalance --store " + o.dir +
                              " without --dry-run to finish it first");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Placement> placement, Placement::Load(StorePlacementState(r.layout, groups), *params_or));
  const partitioner::PartitionMap& map = placement->served();
  const uint32_t shards_after = o.shards == 0 ? map.shards() : o.shards;
  const uint32_t count = std::max(map.shards(), shards_after);
  ASSIGN_OR_RETURN(uint64_t sequence, CommittedBatches(*groups));
  ASSIGN_OR_RETURN(const CellWeights w, WeighCells(*groups, map, o));
  const partitioner::RebalanceOptions ro{.max_move = o.max_move, .target_imbalance = o.target_imbalance};
  ASSIGN_OR_RETURN(partitioner::RebalanceResult plan, partitioner::ReassignCells(map, w.sampled, shards_after, ro));
  std::vector<double> plan_pages(w.pages.begin(), w.pages.end());
  if (o.reslice && plan.imbalance_after > o.target_imbalance) {
    RETURN_IF_ERROR(ResliceIfBetter(r, map, w, shards_after, count, sequence, &plan, &plan_pages, &report.cells_split));
  }
  ReportPlan(o, map, w, plan, plan_pages, shards_after, &report);
  // Cells the sample missed: whole-cell reassignment moved them by weight 0, i.e. not at all,
  // unless their shard is drained (then they are in plan.moves already).
  if (o.dry_run || plan.moves.empty()) {
    if (r.shards != nullptr && !o.dry_run) {
      // Opened to read the sample: the shards it created for nothing go.
      r.shards.reset();
      r.RemoveAdded(map.shards(), count);
    }
    report.generation_after = report.generation_before;
    if (!o.dry_run) report.shards_after = report.shards_before;
    report.seconds = r.Seconds();
    return report;
  }
  RETURN_IF_ERROR(r.OpenShardsOnce(map, count, sequence));
  return MakeMove(r, map, plan.map, std::move(report));
}

std::string RebalanceReportJson(const StoreRebalanceReport& r) {
  std::string j = "{\"map_version_before\":" + std::to_string(r.generation_before) +
                  ",\"map_version_after\":" + std::to_string(r.generation_after) +
                  ",\"shards_before\":" + std::to_string(r.shards_before) +
                  ",\"shards_after\":" + std::to_string(r.shards_after);
  AppendJsonField(&j, "imbalance_before", r.imbalance_before);
  AppendJsonField(&j, "imbalance_after", r.imbalance_after);
  j += ",\"cells_moved\":" + std::to_string(r.moves.size()) + ",\"cells_split\":" + std::to_string(r.cells_split) +
       ",\"pages_relabelled\":" + std::to_string(r.pages_relabelled) + ",\"pages_moved\":" + std::to_string(r.pages_moved) +
       ",\"bytes_moved\":" + std::to_string(r.bytes_moved) + ",\"pages_planned\":" + std::to_string(r.planned_pages);
  AppendJsonField(&j, "pages_estimated", r.estimated_pages);
  AppendJsonField(&j, "seconds", r.seconds);
  AppendJsonField(&j, "throttled_seconds", r.throttled_seconds);
  j += ",\"steps\":" + std::to_string(r.steps);
  j += std::string(",\"dry_run\":") + (r.dry_run ? "true" : "false") + ",\"resumed\":" + (r.resumed ? "true" : "false");
  if (!r.resumed) {
    AppendJsonField(&j, "max_move", r.max_move);
    AppendJsonField(&j, "move_budget", r.move_budget);
    AppendJsonField(&j, "target_imbalance", r.target_imbalance);
    AppendJsonField(&j, "planned_imbalance", r.planned_imbalance);
    j += std::string(",\"target_reached\":") + (r.target_reached ? "true" : "false") + ",\"note\":";
    AppendJsonString(&j, r.note);
  }
  j += "}";
  return j;
}

StatusOr<PlacementReport> CheckPlacement(const StoreLayout& layout, pb::NeardupConfig config) {
  double threshold = config.baseline().threshold();
  SignerOptions signer;
  ASSIGN_OR_RETURN(OpenedStore opened, OpenStoreReadOnly(layout, {}, &config, &threshold, &signer));
  PlacementReport r;
  const partitioner::PartitionMap& map = opened.placement->served();
  r.map_generation = map.proto().generation();
  auto violation = [&](std::string what) {
    ++r.violation_count;
    if (r.violations.size() < kMaxListed) r.violations.push_back(std::move(what));
  };
  if (opened.placement->moving()) {
    const pb::MoveJournal& j = opened.placement->journal();
    violation(fmt::format("a move from map generation {} to {} is not finished: run neardup rebalance --store {}",
                          j.generation_before(), j.generation_after(), layout.dir));
    return r;
  }
  ShardSetOptions so = ShardOptionsFor(layout, config, map.shards());
  so.read_only = true;
  StatusOr<std::unique_ptr<ShardSet>> opened_shards = OpenLocalShardSet(so);
  if (opened_shards.status().code() == StatusCode::kNotFound) {
    // A first run stopped after the map and parameters but before its shards were made holds no
    // page yet; the next run makes them. Past its first batch, a missing shard store is lost data.
    ASSIGN_OR_RETURN(const uint64_t batches, CommittedBatches(*opened.groups));
    if (batches > 0) {
      violation(fmt::format("{} batches committed, but {}", batches, opened_shards.status().message()));
      return r;
    }
    r.shard_pages.assign(map.shards(), 0);
    r.expected_pages.assign(map.shards(), 0);
    r.shard_factor.assign(map.shards(), 1);
    r.imbalance = ImbalanceOf(r.shard_pages);
    r.planned_imbalance = PlannedImbalance(map);
    r.drift = r.imbalance - r.planned_imbalance;
    r.notes.push_back("no batch committed yet and not every shard made (" + opened_shards.status().message() +
                      "): the next run makes them");
    return r;
  }
  RETURN_IF_ERROR(opened_shards.status());
  std::unique_ptr<ShardSet> shards = std::move(*opened_shards);
  r.expected_pages.assign(map.shards(), 0);
  // A shard behind Tier 1 lacks the pages of the batches it has still to redo.
  std::vector<bool> lagging(map.shards(), false);
  ASSIGN_OR_RETURN(const std::vector<LaggingShard> behind, LaggingShards(*opened.groups, *shards, map.shards()));
  for (const LaggingShard& l : behind) {
    lagging[l.shard] = true;
    r.notes.push_back(l.note + ": the next run redoes the rest on it; its placement is not checked");
  }
  RETURN_IF_ERROR(ForEachResident(*opened.groups, [&](std::string_view url, uint32_t cell) -> Status {
    ++r.pages;
    if (cell >= map.cells()) {
      violation(fmt::format("page {} is in cell {}, outside the map's {}", url, cell, map.cells()));
      return Status::Ok();
    }
    const uint32_t m = opened.placement->ShardOf(cell);
    ++r.expected_pages[m];
    if (lagging[m]) return Status::Ok();
    auto sig = shards->Get(m, std::string(url));
    if (sig.status().code() == StatusCode::kNotFound) {
      violation(fmt::format("page {} (cell {}) is not on shard {}, which the map gives its cell", url, cell, m));
    } else if (!sig.ok()) {
      return sig.status();
    }
    return Status::Ok();
  }));
  for (uint32_t m = 0; m < map.shards(); ++m) {
    r.shard_pages.push_back(shards->Stats(m).resident_pages);
    if (!lagging[m] && r.shard_pages[m] != r.expected_pages[m]) {
      violation(fmt::format("shard {} holds {} pages, the map places {} on it (a page held twice, or unknown to Tier 1)",
                            m, r.shard_pages[m], r.expected_pages[m]));
    }
  }
  for (uint32_t m = map.shards(); fs::exists(layout.shard(m)); ++m) {
    violation(fmt::format("{} is beyond the map's {} shards", layout.shard(m), map.shards()));
  }
  r.imbalance = ImbalanceOf(r.shard_pages);
  double mean = 0;
  for (uint64_t p : r.shard_pages) mean += static_cast<double>(p);
  mean /= static_cast<double>(std::max<size_t>(1, r.shard_pages.size()));
  for (uint64_t p : r.shard_pages) r.shard_factor.push_back(mean > 0 ? static_cast<double>(p) / mean : 1);
  r.planned_imbalance = PlannedImbalance(map);
  r.drift = r.imbalance - r.planned_imbalance;
  return r;
}

}  // namespace neardup::pipeline
