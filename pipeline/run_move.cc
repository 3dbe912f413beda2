#include "pipeline/run_move.h"

#include <algorithm>
#include <span>

namespace neardup::pipeline::internal {

using tier1::Classification;

bool MovePacer::BatchDone(uint64_t records, double seconds) {
  if (records == 0) return false;
  if (warmup_batches_ < kWarmup) {
    ++warmup_batches_;
    warmup_seconds_ += seconds;
    warmup_records_ += records;
    return false;
  }
  const double record_cost = warmup_seconds_ / static_cast<double>(std::max<uint64_t>(warmup_records_, 1));
  credit_ = std::min(kMaxCredit, credit_ + static_cast<double>(records) * record_cost / batch_share_ - seconds);
  return true;
}

void AddMoveRemovals(const Placement& placement, const Batch& b, const std::vector<Classification>& classes,
                     google::protobuf::RepeatedPtrField<pb::Tier2Removal>* removals) {
  if (!placement.moving()) return;
  for (size_t i = 0; i < b.records.size(); ++i) {
    const Classification c = classes[i];
    if (c != Classification::kFastPath && c != Classification::kTier2 && c != Classification::kEmpty) continue;
    if (!placement.ClearsOldShard(b.cell[i])) continue;
    pb::Tier2Removal* r = removals->Add();
    r->set_url(b.records[i].url);
    r->set_cell(b.cell[i]);
  }
}

void RouteAgain(const Placement& placement, Batch& b) {
  if (!placement.moving() || b.routed_flipped == placement.flipped()) return;
  b.routed_flipped = placement.flipped();
  const size_t dims = placement.map().dims();
  for (size_t i = 0; i < b.records.size(); ++i) {
    if (b.shards[i].empty()) continue;  // no content, or no shingles: compared nowhere
    placement.Route(b.routed_flipped, std::span<const uint32_t>(b.vectors.data() + i * dims, dims), &b.shards[i]);
  }
}

}  // namespace neardup::pipeline::internal
