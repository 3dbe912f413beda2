// A move's steps between the batches of a run (pipeline/store_move.h takes them; the pacing is
// pipeline/run_move.h's).
#include <spdlog/spdlog.h>

#include "pipeline/pipeline_internal.h"

namespace neardup::pipeline::internal {

Status Pipeline::AdvanceMove(MoveTurn turn, BatchQueue* queue, MovePacer* pacer) {
  if (!moving()) return Status::Ok();
  double wait = 0;
  auto more = [&](uint32_t taken) {
    if (!move_->Due(&wait)) return false;
    switch (turn) {
      case MoveTurn::kSteps: return taken < o_.move_steps_per_batch;
      case MoveTurn::kCredit: return pacer->credit() > 0 && !queue->Waiting();
      case MoveTurn::kIdle: return !queue->Waiting();
    }
    return false;
  };
  if (!more(0)) return Status::Ok();
  // The shards hold every batch Tier 1 committed, and none is being written.
  RETURN_IF_ERROR(writes_->Finish());
  uint32_t taken = 0;
  do {
    const auto t0 = SteadyClock::now();
    const uint64_t relabelled = move_->counts().pages_relabelled;
    RETURN_IF_ERROR(move_->Step(shards_.get(), progress_.batches_committed()));
    // Records the step changed beside Tier 1 are read again.
    if (move_->counts().pages_relabelled != relabelled) RETURN_IF_ERROR(tier1_->ForgetCachedRecords());
    ++taken;
    // Idle time is the move's; a step taken while batches wait is charged to its credit.
    if (turn == MoveTurn::kCredit) pacer->Spend(Since(t0));
    if (move_->done()) return MoveEnded();
  } while (more(taken));
  return Status::Ok();
}

Status Pipeline::EndMove() {
  if (move_->done()) return Status::Ok();
  RETURN_IF_ERROR(writes_->Finish());
  const uint64_t relabelled = move_->counts().pages_relabelled;
  RETURN_IF_ERROR(move_->Finish(shards_.get(), progress_.batches_committed()));
  if (move_->counts().pages_relabelled != relabelled) RETURN_IF_ERROR(tier1_->ForgetCachedRecords());
  return MoveEnded();
}

Status Pipeline::MoveEnded() {
  ASSIGN_OR_RETURN(params_, ReadStoreParams(*store_));
  move_ended_here_ = true;
  sum_.finished_move = true;
  sum_.map_version = params_.map_generation();
  sum_.shards = params_.shards();
  sum_.move_pages = move_->counts().pages_moved;
  sum_.move_bytes = move_->counts().bytes_moved;
  sum_.move_steps = move_->counts().steps;
  sum_.move_seconds = move_->counts().seconds;
  spdlog::info("pipeline: store {} serves map generation {} over {} shards: {} pages moved in {:.1f} s of steps, {} "
               "records decided meanwhile",
               dir_, params_.map_generation(), params_.shards(), sum_.move_pages, sum_.move_seconds,
               sum_.records_during_move);
  if (o_.feed != nullptr) {
    MoveOutcome m;
    m.generation = params_.map_generation();
    m.shards = params_.shards();
    m.pages = sum_.move_pages, m.bytes = sum_.move_bytes, m.steps = sum_.move_steps;
    m.seconds = sum_.move_seconds;
    m.records = sum_.records_during_move;
    o_.feed->MoveEnded(m);
  }
  return Status::Ok();
}

}  // namespace neardup::pipeline::internal
