// How a run sizes itself and a store's group store from what it expects to hold: a small file's
// batch size, the group store's options and memtable, Tier 1's packed tier, and whether the
// input's pages leave the page cache as they are read. Pure functions of their arguments (and of
// the files under the directories named), below the batch loop and the rebalance, which both
// open a store's group store with GroupStoreOptionsFor.
//
// Thread safety: every function may be called from any thread.
#pragma once

#include <cstdint>
#include <string>

#include "pipeline/store.h"
#include "proto/config.pb.h"
#include "tier1/group_store.h"

namespace neardup::pipeline {

// The batch size a run of a file of about `expected_records` records uses, given batch_pages:
// batch_pages, or for a file of fewer than kMinBatchesPerFile batches of it, a kMinBatchesPerFile-th
// of its records, never fewer than kMinSmallFileBatchPages (nor more than batch_pages); 0
// records (an empty file, or one of no known size): batch_pages. The
// tiers decide a batch once the reader has signed it whole, and after the reader's last batch
// they still decide the batches queued behind it: a file of a few large batches spends a large
// part of its run with one side idle.
inline constexpr uint64_t kMinBatchesPerFile = 16;
inline constexpr uint32_t kMinSmallFileBatchPages = 250;
uint32_t SmallInputBatchPages(uint32_t batch_pages, uint64_t expected_records);

// How a run opens a store's group store (PipelineOptions::groups: a caller that opens it itself).
// With tier1.write_buffer_mib 0 the memtable is sized for the store the run will hold: the tables
// already in layout.tier1() and about kTier1BytesPerRecord for each of `expected_records` (the
// input's, EstimateRecordCount), through AutoWriteBufferBytes.
tier1::GroupStore::Options GroupStoreOptionsFor(const StoreLayout& layout, const pb::NeardupConfig& config,
                                                uint64_t expected_records = 0);

// The group store's table bytes a record adds, about (its page, group and redirect records, as
// generated crawls make them).
inline constexpr uint64_t kTier1BytesPerRecord = 300;
// The memtable for a group store expected to hold `table_bytes`: a sixth of it, between 64 MiB and
// 1 GiB. LevelDB's levels are fixed (10 MB, then 10x each), so a store many memtables large
// rewrites each row once per level it crosses (experiments/README.md, Scale); the floor is the
// memory a small run can spare.
uint64_t AutoWriteBufferBytes(uint64_t table_bytes);
// Bytes of LevelDB tables (*.ldb, *.sst) in `dir`; 0 when it does not exist.
uint64_t TableBytesIn(const std::string& dir);

// A store's bytes on disk a record adds, about (Tier 1's tables and the shards' signature logs, as
// generated crawls make them: 3.1 KB a record at 10M records).
inline constexpr uint64_t kStoreBytesPerRecord = 3200;
// Tier 1's packed records (tier1.packed_cache_mib) a record needs, about: a page, a group and a
// member list serialized, with their map entries.
inline constexpr uint64_t kPackedBytesPerRecord = 450;
// Tier 1's packed tier for a store expected to hold `store_bytes` on a machine whose process may
// use `memory_bytes` (MemoryBytes()), with tier1.packed_cache_mib 0 and tier1.packed_cache_auto:
// 0 while the store fits in that memory (its tables stay in the page cache, where a LevelDB read
// takes microseconds); past it, where LevelDB's reads of Tier 1's records reach the disk, room for
// every record of the store (store_bytes / kStoreBytesPerRecord of them, kPackedBytesPerRecord
// each), up to a quarter of the memory. 0 when memory_bytes is 0 (unknown).
uint64_t AutoPackedCacheBytes(uint64_t store_bytes, uint64_t memory_bytes);
// Bytes of the files under `dir` (recursively); 0 when it does not exist.
uint64_t FileBytesUnder(const std::string& dir);
// Whether a run drops its input's pages from the page cache as it reads them
// (LineReaderOptions::drop_read_pages): when the input and the store it is expected to hold
// (`input_bytes`, `store_bytes`) come to more than half of `memory_bytes` (MemoryBytes()), where
// an input read once would push the store's table pages out of the cache. Below that both stay
// cached: the input is read twice (the map's sample pass, then the run), and a run on it again
// reads it from memory. True when memory_bytes is 0 (unknown).
bool DropInputPages(uint64_t input_bytes, uint64_t store_bytes, uint64_t memory_bytes);

}  // namespace neardup::pipeline
