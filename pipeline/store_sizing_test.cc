// A run's sizing from what it expects (pipeline/store_sizing.h): a small file's batches, the group
// store's options and memtable, Tier 1's packed tier, and when the input leaves the page cache.
#include "pipeline/store_sizing.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/config.h"
#include "testing/temp_dir.h"

namespace neardup::pipeline {
namespace {

// A small file is cut into at least kMinBatchesPerFile batches, of no fewer than
// kMinSmallFileBatchPages records, never more than batch_pages.
TEST(SmallInputBatchPagesTest, ASmallFileIsCutIntoEnoughBatches) {
  EXPECT_EQ(SmallInputBatchPages(2000, 1'000'000), 2000u);
  EXPECT_EQ(SmallInputBatchPages(2000, 32'000), 2000u);
  EXPECT_EQ(SmallInputBatchPages(2000, 31'999), 1999u);
  EXPECT_EQ(SmallInputBatchPages(2000, 7'513), 469u);
  EXPECT_EQ(SmallInputBatchPages(2000, 1'000), kMinSmallFileBatchPages);
  EXPECT_EQ(SmallInputBatchPages(100, 1'000), 100u);
  EXPECT_EQ(SmallInputBatchPages(2000, 0), 2000u);
}

// Tier 1's records are kept packed only for a store that outgrows the memory: room for each of its
// records, up to a quarter of the memory.
TEST(AutoPackedCacheBytesTest, OnlyForAStorePastTheMemory) {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  EXPECT_EQ(AutoPackedCacheBytes(3 * kGiB, 24 * kGiB), 0u);   // 1M records: the page cache holds it
  EXPECT_EQ(AutoPackedCacheBytes(24 * kGiB, 24 * kGiB), 0u);
  EXPECT_EQ(AutoPackedCacheBytes(32'000'000'000, 24 * kGiB), 10'000'000 * kPackedBytesPerRecord);  // 10M records
  EXPECT_EQ(AutoPackedCacheBytes(320'000'000'000, 24 * kGiB), 6 * kGiB);  // a quarter of the memory at most
  EXPECT_EQ(AutoPackedCacheBytes(32'000'000'000, 0), 0u);  // memory unknown
}

// The input's pages leave the page cache as they are read only when the input and the store would
// take more than half of the memory.
TEST(DropInputPagesTest, OnlyForAnInputAndStorePastHalfTheMemory) {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  EXPECT_FALSE(DropInputPages(3'000'000'000, 3'200'000'000, 24 * kGiB));  // 1M records
  EXPECT_TRUE(DropInputPages(30'000'000'000, 32'000'000'000, 24 * kGiB));  // 10M records
  EXPECT_FALSE(DropInputPages(6 * kGiB, 6 * kGiB, 24 * kGiB));  // half of it exactly
  EXPECT_TRUE(DropInputPages(6 * kGiB, 6 * kGiB + 1, 24 * kGiB));
  EXPECT_TRUE(DropInputPages(1, 1, 0));  // memory unknown
}

TEST(FileBytesUnderTest, CountsTheFilesOfEveryLevel) {
  test::TempDir dir;
  EXPECT_EQ(FileBytesUnder(dir.File("none")), 0u);
  std::filesystem::create_directories(dir.File("a/b"));
  std::ofstream(dir.File("top")) << std::string(100, 'x');
  std::ofstream(dir.File("a/b/deep")) << std::string(23, 'y');
  EXPECT_EQ(FileBytesUnder(dir.str()), 123u);
}

// The group store's options follow the configuration's tier1 section.
TEST(PipelineStore, GroupStoreOptionsFollowTheConfiguration) {
  pb::NeardupConfig config = DefaultConfig();
  config.mutable_tier1()->set_write_buffer_mib(128);
  config.mutable_tier1()->set_cache_mib(48);
  config.mutable_tier1()->set_compress(true);
  const tier1::GroupStore::Options go = GroupStoreOptionsFor(StoreLayout{"/data/s"}, config);
  EXPECT_EQ(go.path, "/data/s/tier1");
  EXPECT_EQ(go.write_buffer_bytes, uint64_t{128} << 20);
  EXPECT_EQ(go.cache_bytes, uint64_t{48} << 20);
  EXPECT_TRUE(go.compress);
  EXPECT_TRUE(go.async_writes);
}

// tier1.write_buffer_mib 0 sizes the memtable for the store a run expects: a sixth of the tables
// already there and of the records to come, never under 64 MiB nor over 1 GiB.
TEST(PipelineStore, WriteBufferFollowsTheExpectedStore) {
  EXPECT_EQ(AutoWriteBufferBytes(0), uint64_t{64} << 20);
  EXPECT_EQ(AutoWriteBufferBytes(uint64_t{600} << 20), uint64_t{100} << 20);
  EXPECT_EQ(AutoWriteBufferBytes(uint64_t{1} << 40), uint64_t{1} << 30);

  test::TempDir dir;
  const StoreLayout layout{dir.path().string()};
  pb::NeardupConfig config = DefaultConfig();
  ASSERT_EQ(config.tier1().write_buffer_mib(), 0u);
  // 1M records of about 300 B: 300 MB, a sixth under the floor.
  EXPECT_EQ(GroupStoreOptionsFor(layout, config, 1'000'000).write_buffer_bytes, uint64_t{64} << 20);
  EXPECT_EQ(GroupStoreOptionsFor(layout, config, 10'000'000).write_buffer_bytes,
            10'000'000 * kTier1BytesPerRecord / 6);
  // A store that holds 1.2 GB of tables already (a sparse file: its size is what counts); the
  // other files of its directory are not tables.
  std::filesystem::create_directories(layout.tier1());
  for (const char* name : {"/000007.ldb", "/000009.log"}) std::ofstream(layout.tier1() + name).put('x');
  std::filesystem::resize_file(layout.tier1() + "/000007.ldb", 1'200'000'000);
  std::filesystem::resize_file(layout.tier1() + "/000009.log", 500'000'000);
  EXPECT_EQ(TableBytesIn(layout.tier1()), 1'200'000'000u);
  EXPECT_EQ(GroupStoreOptionsFor(layout, config).write_buffer_bytes, uint64_t{200'000'000});
  EXPECT_EQ(GroupStoreOptionsFor(layout, config, 2'000'000).write_buffer_bytes,
            (1'200'000'000 + 2'000'000 * kTier1BytesPerRecord) / 6);
  EXPECT_EQ(TableBytesIn(dir.File("none")), 0u);
  // An explicit size is taken as it is.
  config.mutable_tier1()->set_write_buffer_mib(32);
  EXPECT_EQ(GroupStoreOptionsFor(layout, config, 10'000'000).write_buffer_bytes, uint64_t{32} << 20);
}

}  // namespace
}  // namespace neardup::pipeline
