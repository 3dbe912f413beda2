#include "pipeline/store_sizing.h"

#include <algorithm>
#include <filesystem>

namespace neardup::pipeline {

uint64_t AutoWriteBufferBytes(uint64_t table_bytes) {
  return std::clamp<uint64_t>(table_bytes / 6, uint64_t{64} << 20, uint64_t{1} << 30);
}

uint64_t AutoPackedCacheBytes(uint64_t store_bytes, uint64_t memory_bytes) {
  if (memory_bytes == 0 || store_bytes <= memory_bytes) return 0;
  return std::min(store_bytes / kStoreBytesPerRecord * kPackedBytesPerRecord, memory_bytes / 4);
}

bool DropInputPages(uint64_t input_bytes, uint64_t store_bytes, uint64_t memory_bytes) {
  return memory_bytes == 0 || input_bytes + store_bytes > memory_bytes / 2;
}

uint64_t FileBytesUnder(const std::string& dir) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code file_ec;
    if (!it->is_regular_file(file_ec) || file_ec) continue;
    const uint64_t size = it->file_size(file_ec);
    if (!file_ec) bytes += size;
  }
  return bytes;
}

uint64_t TableBytesIn(const std::string& dir) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string ext = it->path().extension().string();
    if (ext != ".ldb" && ext != ".sst") continue;
    std::error_code size_ec;
    const uint64_t size = it->file_size(size_ec);
    if (!size_ec) bytes += size;
  }
  return bytes;
}

uint32_t SmallInputBatchPages(uint32_t batch_pages, uint64_t expected_records) {
  if (expected_records == 0) return batch_pages;  // empty, or of no known size
  const uint64_t share = std::max<uint64_t>(expected_records / kMinBatchesPerFile, kMinSmallFileBatchPages);
  return static_cast<uint32_t>(std::min<uint64_t>(batch_pages, share));
}

tier1::GroupStore::Options GroupStoreOptionsFor(const StoreLayout& layout, const pb::NeardupConfig& config,
                                                uint64_t expected_records) {
  tier1::GroupStore::Options go;
  go.path = layout.tier1();
  go.sync = config.tier1().sync();
  go.cache_bytes = static_cast<uint64_t>(config.tier1().cache_mib()) << 20;
  go.compress = config.tier1().compress();
  const uint32_t mib = config.tier1().write_buffer_mib();
  go.write_buffer_bytes = mib > 0 ? uint64_t{mib} << 20
                                  : AutoWriteBufferBytes(TableBytesIn(go.path) + expected_records * kTier1BytesPerRecord);
  // Tier 1's commit is inserted and synced by the store's writer thread while the tiers' thread
  // goes on with the batch's status queries (which see it); the status lines and the shards'
  // writes wait for it.
  go.async_writes = true;
  return go;
}

}  // namespace neardup::pipeline
