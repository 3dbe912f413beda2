// IngestFeed: what a pipeline run fed by a growing input (a Tier 1 server's ingest log) needs
// from the process that runs it, and what it tells that process as it goes.
//
// Such a run (PipelineOptions::feed) reads the input no further than ReadableBytes(), which ends
// at a record's end; when it has read all of it, it waits (WaitReadable) and cuts the batch it
// holds short once the input stayed idle for `linger`, or its first record waited
// `max_batch_delay` (PipelineOptions): a steady stream makes full batches, a trickle makes small
// ones soon. It never records the input as consumed, and ends (Ok) when Stopping() turns true:
// what it had not committed stays in the input, for the next run.
//
// Calls come from the run's threads (the reading thread and the tiers' thread), so an
// implementation is thread-safe. The references handed to Opened() are valid until Closing().
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>

#include "document/signature.h"

namespace neardup::pipeline {

class ShardSet;
class Placement;

// At a batch's commit, what the run has done since it started (a batch redone after a crash is
// not counted again), and the store's verification counters over its life: a server adds the
// first to what its earlier runs did, so that its counters move batch by batch.
struct FeedCounters {
  uint64_t records = 0, batches = 0, new_pages = 0, unchanged = 0, changed = 0, fast_path = 0;
  uint64_t tier2_pages = 0, tier2_sends = 0, redirects = 0, merges = 0, repairs = 0;
  uint64_t verifications = 0, rejections = 0;  // the store's
};

// A move a run ended: the map generation and shard count the store serves now, the signatures
// the run copied (and their bytes) in how many durable steps and seconds of them, and the records
// it decided while the move was open.
struct MoveOutcome {
  uint64_t generation = 0;
  uint32_t shards = 0;
  uint64_t pages = 0, bytes = 0, steps = 0;
  double seconds = 0;
  uint64_t records = 0;
};

class IngestFeed {
 public:
  virtual ~IngestFeed() = default;

  // Bytes of the input that may be read now (whole records).
  virtual uint64_t ReadableBytes() = 0;
  // Waits until ReadableBytes() > have, `until` passes, or Stopping(). Spurious returns are fine.
  virtual void WaitReadable(uint64_t have, std::chrono::steady_clock::time_point until) = 0;
  // The run is to end at the next record it reads or the next wait.
  virtual bool Stopping() = 0;

  // The run's shards and map are open: they may be read (const: ShardSet's Compare, Get, Stats)
  // from other threads until Closing().
  struct View {
    const ShardSet* shards = nullptr;
    // Where the pages are (pipeline/placement.h): route with Route, read signatures from ShardOf
    // (a move's changes included), sign for the cells of its map().
    const Placement* placement = nullptr;
    double threshold = 0;
    SignerOptions signer;
  };
  virtual void Opened(const View& view) = 0;
  virtual void Closing() = 0;
  // The input's records up to byte `end_offset` are committed (batch `batch`), durably, and their
  // pages answered: a status query now finds them decided. `counters`: the run's so far, this
  // batch included.
  virtual void BatchDone(uint64_t batch, uint64_t end_offset, const FeedCounters& counters) = 0;
  // Tier 2 could not compare batch `batch` (a shard did not answer): per page of the batch, its
  // URL and the share of the resident pages of the shards it was routed to that answered (1: all
  // did). The run ends with the error; the batch stays uncommitted and the next run compares it
  // again.
  // The run ended the store's move (pipeline/store_move.h).
  virtual void MoveEnded(const MoveOutcome& move) { (void)move; }
  virtual void CompareIncomplete(uint64_t batch, std::span<const std::string> urls,
                                 std::span<const double> completeness) = 0;
};

}  // namespace neardup::pipeline
