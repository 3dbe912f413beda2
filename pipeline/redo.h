// A restart of the batch loop (pipeline/pipeline.h: Restart): where a run starts in its input
// (the interrupted input continued after its last committed record, an input consumed whole
// before, or the next crawl), which shards missed the last committed batch, and that batch's
// classifications, with which its shard writes and status lines are redone.
//
// Thread safety: the functions are reentrant; FindInputStart changes only the progress it is given.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "document/crawl_reader.h"
#include "pipeline/placement.h"
#include "pipeline/shard_set.h"
#include "pipeline/store.h"
#include "proto/neardup.pb.h"
#include "proto/tier1.pb.h"
#include "tier1/tier1.h"

namespace neardup::pipeline::internal {

// The shards (of the shard set) whose committed batch is behind the `batches_committed` Tier 1
// committed: they missed the last one. A shard a move adds holds no batch until the first one
// after its making, and is not behind. The shards' errors.
StatusOr<std::vector<bool>> ShardsBehind(const ShardSet& shards, const Placement& placement,
                                         uint64_t batches_committed);

// The classifications of the batch to redo: Tier 1's, as its commit recorded them (`stored`, one
// byte each) when they are there; else worked out from the records as far as they can be (gone,
// redirect, empty, a URL's earlier records superseded), the rest taken as compared by Tier 2.
std::vector<tier1::Classification> RedoClasses(const std::vector<CrawlRecord>& records,
                                               const std::vector<pb::PageSignature>& signatures,
                                               const std::string& stored);

struct InputStartOptions {
  std::string input;          // the input's path, as given (read for its digest)
  std::string input_name;     // recorded as the input's name (its absolute path)
  uint64_t input_size = 0;
  std::string store;          // the store's directory (in messages)
  bool lagging = false;       // a shard missed the last committed batch (ShardsBehind)
  bool followed = false;      // the input is a growing one (pipeline/ingest_feed.h)
  bool abandon_interrupted = false;  // PipelineOptions::abandon_interrupted
};

// Where the run starts in its input.
struct InputStart {
  bool resuming = false;        // the store's interrupted input, continued
  uint64_t skip = 0;            // records before this index are already committed
  uint64_t redo_from = 0;       // when resuming: the last committed batch's first record
  std::string already_consumed; // non-empty: the input was consumed whole before, under this name
  std::unique_ptr<PrefixDigest> digest;  // the input hashed up to where the run reads next
};

// Compares the input with the store's progress (*progress): the interrupted input again (known by
// its committed bytes) resumes; an input consumed whole before is reported; any other is the next
// crawl, which *progress then records as current. Errors: FailedPrecondition for another input
// while a shard misses the interrupted one's last batch, or while it is unfinished (unless
// abandon_interrupted), or for a followed input the store recorded as consumed; IoError for an
// unreadable input.
StatusOr<InputStart> FindInputStart(pb::Tier1Progress* progress, const InputStartOptions& o);

}  // namespace neardup::pipeline::internal
