// A batch of signed records on its way from the reading thread to the tiers' thread, and the
// bounded queue that hands batches over between them (pipeline/pipeline.h: steps 1 and 2).
//
// Thread safety: a Batch is written by the reading thread until it is pushed, then owned by the
// tiers' thread. BatchQueue is thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "document/crawl_reader.h"
#include "proto/neardup.pb.h"

namespace neardup::pipeline::internal {

struct Batch {
  uint64_t number = 0;          // 1-based, as committed
  uint64_t first_record = 0;    // 0-based input record index
  bool redo = false;            // only step 5 for shards that missed it, and its status lines
  // Where its last record's line ends in the input, and the XXH3-128 of the input up to there.
  uint64_t end_offset = 0, digest_lo = 0, digest_hi = 0;
  std::vector<CrawlRecord> records;
  std::vector<pb::PageSignature> signatures;  // per record (empty for redirects); a Signer made them
  std::vector<uint32_t> cell;                 // home cell per content record
  std::vector<std::vector<uint32_t>> shards;  // shards to compare on
  // While a move runs: each record's map vector (dims apiece, in order; zeros without content),
  // and whether the batch was routed on the move's new map (after its flip) or its old one: a
  // batch compared on the other side of the flip is routed again (RouteAgain, pipeline/run_move.h).
  std::vector<uint32_t> vectors;
  bool routed_flipped = false;
};

// A bounded hand-off: Push waits while `capacity` batches wait; Pop waits for one. Close ends it
// (the tiers' thread failed or is done, or the reader read its last batch): Push refuses, Pop
// returns the batches still queued, then null.
class BatchQueue {
 public:
  explicit BatchQueue(size_t capacity) : capacity_(capacity) {}
  // False (and the batch dropped) once closed.
  bool Push(std::unique_ptr<Batch> b);
  // The next batch; null once closed and empty.
  std::unique_ptr<Batch> Pop();
  // Pop, waiting no longer than `timeout`: null and *timed_out when none came by then.
  std::unique_ptr<Batch> PopFor(std::chrono::duration<double> timeout, bool* timed_out);
  bool Closed() const;
  // A batch is waiting to be popped.
  bool Waiting() const;
  void Close();

 private:
  std::unique_ptr<Batch> TakeLocked();  // mu_ held, q_ not empty

  mutable std::mutex mu_;
  std::condition_variable not_empty_, not_full_;
  std::deque<std::unique_ptr<Batch>> q_;
  size_t capacity_;
  bool closed_ = false;
};

}  // namespace neardup::pipeline::internal
