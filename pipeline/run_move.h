// A move in progress during a run (pipeline/store_move.h takes its steps; this is what the batch
// loop does around them): how much of the tiers' thread the move may take (MovePacer), the
// removals a batch adds from a move's flip to its end (AddMoveRemovals), and a batch routed on one
// side of the flip and compared on the other routed again (RouteAgain).
//
// Thread safety: MovePacer is used by one thread (the tiers'); the functions read the Placement,
// whose readers may run on any thread (pipeline/placement.h).
#pragma once

#include <cstdint>
#include <vector>

#include "pipeline/batch.h"
#include "pipeline/placement.h"
#include "proto/tier1.pb.h"
#include "tier1/tier1.h"

namespace neardup::pipeline::internal {

// While a move runs, the batches keep `batch_share` (pipeline.move_min_batch_share) of their
// throughput: the run's first batches (kWarmup) take no step and give the time a record costs
// without the move; then each batch buys the move the time its records may take at the share
// (records x that cost / share) less the time the batch took (a move slows the batches too:
// double writes, the shards' own work for the copy), and the steps spend it. The credit is capped
// at kMaxCredit seconds, so that a move starved for a while does not then hold the batches back
// for long.
class MovePacer {
 public:
  static constexpr int kWarmup = 3;
  static constexpr double kMaxCredit = 2.0;
  explicit MovePacer(double batch_share) : batch_share_(batch_share) {}
  // A batch of `records` (0: a redo, which counts for nothing) took `seconds` while the move was
  // open. True when the move may now spend its credit (past the warmup).
  bool BatchDone(uint64_t records, double seconds);
  // Seconds of the tiers' thread the move may take now (none when not positive).
  double credit() const { return credit_; }
  // A step taken on credit took `seconds`.
  void Spend(double seconds) { credit_ -= seconds; }

 private:
  double batch_share_;
  double credit_ = 0;
  int warmup_batches_ = 0;
  double warmup_seconds_ = 0;
  uint64_t warmup_records_ = 0;
};

// Between a move's flip and its end: each page of the batch stored in a moved cell is removed from
// its old shard too (appended to *removals), so that the old shard holds no stale version of it
// until the drop (pipeline/store_move.h). Nothing without an open move.
void AddMoveRemovals(const Placement& placement, const Batch& b, const std::vector<tier1::Classification>& classes,
                     google::protobuf::RepeatedPtrField<pb::Tier2Removal>* removals);

// During a move, a batch routed on the map the placement no longer serves is routed again on the
// one it serves (the served map's shards hold every page, current).
void RouteAgain(const Placement& placement, Batch& b);

}  // namespace neardup::pipeline::internal
