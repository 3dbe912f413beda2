#include "storage/row_store.h"

#include <gtest/gtest.h>
#include <leveldb/db.h>
#include <leveldb/env.h>
#include <leveldb/helpers/memenv.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "storage/fault_env.h"

namespace neardup {
namespace {

namespace fs = std::filesystem;
using Cells = std::vector<std::pair<std::string, std::string>>;

class RowStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("row_store_test_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // An in-memory store (fast, nothing to clean up); set env = nullptr for one on disk under dir_.
  RowStoreOptions Options(std::vector<std::string> families = {"page", "member", "meta"}) {
    RowStoreOptions o;
    o.path = dir_.string();
    o.families = std::move(families);
    o.sync = false;
    o.clock = &clock_;
    o.env = mem_env_.get();
    return o;
  }
  std::unique_ptr<RowStore> OpenStore(const RowStoreOptions& o) {
    StatusOr<std::unique_ptr<RowStore>> s = RowStore::Open(o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  std::unique_ptr<RowStore> OpenStore() { return OpenStore(Options()); }
  // A store of its own under dir_, written directly or by the writer thread (async_writes).
  std::unique_ptr<RowStore> OpenStoreWriting(bool async_writes) {
    RowStoreOptions o = Options();
    o.path = (dir_ / (async_writes ? "async" : "direct")).string();
    o.async_writes = async_writes;
    return OpenStore(o);
  }
  // Options on faulty_env_ (over the memory Env), fsync'ed, with async_writes as given.
  RowStoreOptions FaultyOptions(bool async_writes) {
    RowStoreOptions o = Options();
    o.env = &faulty_env_;
    o.sync = true;
    o.async_writes = async_writes;
    return o;
  }

  void SnapshotsSeeRowsAndCountersOfOneMoment(const RowStoreOptions& o);
  static Cells ScanRow(const RowStore& store, RowStore::Family f, std::string_view row) {
    Cells out;
    EXPECT_TRUE(store.ScanRow(f, row, [&](std::string_view c, std::string_view v) {
      out.emplace_back(c, v);
      return true;
    }).ok());
    return out;
  }
  static std::vector<std::string> ScanFamily(const RowStore& store, RowStore::Family f) {
    std::vector<std::string> out;  // "row|column=value"
    EXPECT_TRUE(store.ScanFamily(f, [&](std::string_view r, std::string_view c, std::string_view v) {
      out.push_back(std::string(r) + "|" + std::string(c) + "=" + std::string(v));
      return true;
    }).ok());
    return out;
  }

  fs::path dir_;
  ManualClock clock_{1'000'000};
  std::unique_ptr<leveldb::Env> mem_env_{leveldb::NewMemEnv(leveldb::Env::Default())};
  FaultyEnv faulty_env_{mem_env_.get()};
};

// Every file of a directory, by name, with its bytes and modification time.
std::map<std::string, std::pair<std::string, fs::file_time_type>> Snapshot(const fs::path& dir) {
  std::map<std::string, std::pair<std::string, fs::file_time_type>> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    out[e.path().filename().string()] = {bytes, fs::last_write_time(e.path())};
  }
  return out;
}

// A read-only open reads what was written, the unflushed log included, refuses writes, and leaves
// every file as it was (LevelDB's own open writes a table, a MANIFEST, CURRENT and LOG).
TEST_F(RowStoreTest, ReadOnlyOpenLeavesEveryFileAsItWas) {
  RowStoreOptions o = Options();
  o.env = nullptr;  // on disk
  {
    auto store = OpenStore(o);
    ASSERT_NE(store, nullptr);
    RowBatch b;
    for (int i = 0; i < 100; ++i) {
      const std::string n = std::to_string(i);
      b.Put(store->family("page"), std::string("row").append(n), "", std::string("v").append(n));
    }
    b.AddCounter("pages", 100);
    ASSERT_TRUE(store->Write(b).ok());
  }
  const auto before = Snapshot(dir_);
  ASSERT_FALSE(before.empty());
  o.read_only = true;
  for (int round = 0; round < 2; ++round) {
    auto store = OpenStore(o);
    ASSERT_NE(store, nullptr);
    std::string v;
    ASSERT_TRUE(store->Get(store->family("page"), "row42", "", &v).ok());
    EXPECT_EQ(v, "v42");
    EXPECT_EQ(store->Counter("pages"), 100);
    RowBatch b;
    b.Put(store->family("page"), "row1", "", "changed");
    EXPECT_EQ(store->Write(b).code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(store->PurgeExpired().status().code(), StatusCode::kFailedPrecondition);
  }
  EXPECT_EQ(Snapshot(dir_), before);
  // A read-only open of a store that does not exist fails, and creates nothing.
  o.path = (dir_ / "absent").string();
  EXPECT_FALSE(RowStore::Open(o).ok());
  EXPECT_FALSE(fs::exists(dir_ / "absent"));
}

TEST_F(RowStoreTest, PutGetDelete) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const RowStore::Family page = store->family("page");
  EXPECT_EQ(page, 1);
  EXPECT_EQ(store->family("meta"), 3);

  std::string v = "untouched";
  EXPECT_EQ(store->Get(page, "http://a/", "", &v).code(), StatusCode::kNotFound);
  EXPECT_EQ(v, "untouched");

  RowBatch b;
  b.Put(page, "http://a/", "", "record");
  b.Put(page, "http://a/", "lease", "x");
  ASSERT_TRUE(store->Write(b).ok());
  EXPECT_EQ(b.operations(), 2u);  // left unchanged
  ASSERT_TRUE(store->Get(page, "http://a/", "", &v).ok());
  EXPECT_EQ(v, "record");
  ASSERT_TRUE(store->Get(page, "http://a/", "lease", &v).ok());
  EXPECT_EQ(v, "x");
  EXPECT_EQ(store->Get(store->family("member"), "http://a/", "", &v).code(), StatusCode::kNotFound);

  b.Clear();
  EXPECT_TRUE(b.empty());
  b.Put(page, "http://a/", "", "first");
  b.Put(page, "http://a/", "", "second");  // later operations of a batch win
  b.Delete(page, "http://a/", "lease");
  ASSERT_TRUE(store->Write(b).ok());
  ASSERT_TRUE(store->Get(page, "http://a/", "", &v).ok());
  EXPECT_EQ(v, "second");
  EXPECT_EQ(store->Get(page, "http://a/", "lease", &v).code(), StatusCode::kNotFound);
  EXPECT_GT(store->DiskBytes(), 0u);
}

// A batch is written in key order (the memtable inserts faster so), and that must not change what
// it does: many keys in scrambled order, each put, deleted and put again several times within the
// batch, with counters among them, end as their last operation says, written directly or by the
// writer thread.
TEST_F(RowStoreTest, ABatchEndsAsItsLastOperationOnEachKeySays) {
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async writes" : "direct writes");
    auto store = OpenStoreWriting(async);
    ASSERT_NE(store, nullptr);
    const RowStore::Family page = store->family("page");
    std::map<std::string, std::optional<std::string>> want;
    RowBatch b;
    for (int round = 0; round < 4; ++round) {
      for (int i = 0; i < 300; ++i) {
        const std::string row = std::to_string((i * 7919 + round * 31) % 300);
        const std::string value = std::to_string(round * 1000 + i);
        if ((i + round) % 3 == 0) {
          b.Delete(page, row, "");
          want[row] = std::nullopt;
        } else {
          b.Put(page, row, "", value);
          want[row] = value;
        }
      }
      b.AddCounter("ops", 300);
    }
    ASSERT_TRUE(store->Write(b).ok());
    ASSERT_TRUE(store->WaitForWrites().ok());
    for (const auto& [row, value] : want) {
      std::string got;
      const Status s = store->Get(page, row, "", &got);
      if (value) {
        ASSERT_TRUE(s.ok()) << row;
        EXPECT_EQ(got, *value) << row;
      } else {
        EXPECT_EQ(s.code(), StatusCode::kNotFound) << row;
      }
    }
    EXPECT_EQ(store->Counter("ops"), 1200);
  }
}

// Each write's LevelDB batch is reused by a later one (its buffer keeps its size): a write must
// carry nothing of the one before it. Here a later write's earlier cell would undo a Delete.
TEST_F(RowStoreTest, AReusedWriteBufferCarriesNothingOfTheWriteBefore) {
  for (bool async_writes : {false, true}) {
    SCOPED_TRACE(async_writes ? "async" : "sync");
    auto store = OpenStoreWriting(async_writes);
    ASSERT_NE(store, nullptr);
    const RowStore::Family page = store->family("page");
    for (int i = 0; i < 20; ++i) {
      RowBatch put;
      put.Put(page, "p" + std::to_string(i), "", std::string(1000, 'x'));
      ASSERT_TRUE(store->Write(put).ok());
      RowBatch del;
      del.Delete(page, "p" + std::to_string(i), "");
      ASSERT_TRUE(store->Write(del).ok());
    }
    RowBatch last;
    last.Put(page, "last", "", "y");
    ASSERT_TRUE(store->Write(last).ok());
    ASSERT_TRUE(store->WaitForWrites().ok());
    std::string v;
    for (int i = 0; i < 20; ++i) {
      EXPECT_EQ(store->Get(page, "p" + std::to_string(i), "", &v).code(), StatusCode::kNotFound) << i;
    }
    ASSERT_TRUE(store->Get(page, "last", "", &v).ok());
    EXPECT_EQ(v, "y");
    store.reset();
    store = OpenStoreWriting(async_writes);  // and so on disk
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->Get(page, "p0", "", &v).code(), StatusCode::kNotFound);
    EXPECT_EQ(store->Get(page, "p19", "", &v).code(), StatusCode::kNotFound);
  }
}

// Over the default Env the tables are read with pread, never mapped into the process: mapped
// table pages would stay in its resident set as the store grows.
TEST_F(RowStoreTest, TablesAreReadWithoutMappingThem) {
  fs::create_directories(dir_);
  RowStoreOptions o = Options();
  o.env = nullptr;  // the default Env, on disk
  o.path = (dir_ / "unmapped").string();
  o.write_buffer_bytes = 64 << 10;  // small: the rows go to tables
  auto store = OpenStore(o);
  ASSERT_NE(store, nullptr);
  const RowStore::Family page = store->family("page");
  RowBatch b;
  for (int i = 0; i < 20000; ++i) {
    b.Put(page, "http://m.example/" + std::to_string(i), "", std::string(200, 'a' + i % 3));
    if (b.operations() == 500) {
      ASSERT_TRUE(store->Write(b).ok());
      b.Clear();
    }
  }
  ASSERT_TRUE(store->Write(b).ok());
  store.reset();
  store = OpenStore(o);  // reads come from tables now
  ASSERT_NE(store, nullptr);
  std::string v;
  for (int i = 0; i < 20000; i += 7) {
    ASSERT_TRUE(store->Get(page, "http://m.example/" + std::to_string(i), "", &v).ok()) << i;
    ASSERT_EQ(v, std::string(200, 'a' + i % 3)) << i;
  }
  std::ifstream maps("/proc/self/maps");
  int tables = 0, mapped = 0;
  for (std::string line; std::getline(maps, line);) {
    if (line.find(o.path) != std::string::npos) ++mapped;
  }
  for (const auto& f : fs::directory_iterator(o.path)) tables += f.path().extension() == ".ldb";
  EXPECT_GT(tables, 0);
  EXPECT_EQ(mapped, 0) << "a table of " << o.path << " is mapped";
}

// compress = true snappy-compresses the tables (smaller on disk for repetitive values); a store
// reopened with the other setting reads the tables written with the first.
TEST_F(RowStoreTest, CompressionIsAnOptionAndMixedTablesRead) {
  auto fill = [&](RowStore& store, int from, int to) {
    RowBatch b;
    for (int i = from; i < to; ++i) {
      b.Put(store.family("page"), "http://a.example/" + std::to_string(i), "", std::string(200, 'a' + i % 3));
      if (b.operations() == 500) {
        ASSERT_TRUE(store.Write(b).ok());
        b.Clear();
      }
    }
    ASSERT_TRUE(store.Write(b).ok());
  };
  uint64_t bytes[2] = {0, 0};
  fs::create_directories(dir_);
  for (bool compress : {false, true}) {
    RowStoreOptions o = Options();
    o.env = nullptr;  // on disk: table sizes are real
    o.path = (dir_ / (compress ? "z" : "plain")).string();
    o.write_buffer_bytes = 64 << 10;  // small: the rows go to tables
    o.compress = compress;
    auto store = OpenStore(o);
    ASSERT_NE(store, nullptr);
    fill(*store, 0, 20000);
    bytes[compress] = store->DiskBytes();
    store.reset();
    o.compress = !compress;  // reopened the other way: old tables still read, new ones follow o
    store = OpenStore(o);
    ASSERT_NE(store, nullptr);
    fill(*store, 20000, 25000);
    std::string v;
    for (int i : {0, 7, 19999, 20000, 24999}) {
      ASSERT_TRUE(store->Get(store->family("page"), "http://a.example/" + std::to_string(i), "", &v).ok()) << i;
      EXPECT_EQ(v, std::string(200, 'a' + i % 3));
    }
  }
  EXPECT_LT(bytes[1] * 2, bytes[0]) << "compressed " << bytes[1] << " B, plain " << bytes[0] << " B";
}

// table_stats: what LevelDB holds, wrote and read to compact, counted from the store's opening.
TEST_F(RowStoreTest, TableStatsCountWhatLevelDbWrote) {
  RowStoreOptions o = Options();
  // On disk: LevelDB's compaction thread outlives the store, and the in-memory Env is the
  // fixture's (freed before the thread is done with it, as far as ThreadSanitizer can see).
  o.env = nullptr;
  fs::create_directories(dir_);
  o.write_buffer_bytes = 256 << 10;  // small: many flushes, and compactions behind them
  o.compress = false;                // the tables' sizes are the rows'
  auto store = OpenStore(o);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->table_stats().written_bytes, 0u) << "nothing written yet";
  constexpr int kRows = 40000;
  auto fill = [&](char c) {
    RowBatch b;
    for (int i = 0; i < kRows; ++i) {
      const int k = static_cast<int>((static_cast<int64_t>(i) * 7919) % kRows);  // all over the key space
      b.Put(store->family("page"), "http://a.example/" + std::to_string(k), "", std::string(250, c));
      if (b.operations() == 1000) {
        ASSERT_TRUE(store->Write(b).ok());
        b.Clear();
      }
    }
    ASSERT_TRUE(store->Write(b).ok());
  };
  fill('a');
  fill('b');  // the same rows again: compactions drop the first versions
  const RowStore::TableStats t = store->table_stats();
  const uint64_t data = uint64_t{kRows} * 250;  // one version of every row's value
  EXPECT_GE(t.held_bytes, data / 2) << "whole MiB; some rows may still be in the memtable";
  EXPECT_LE(t.held_bytes, 4 * data);
  EXPECT_GE(t.written_bytes, data) << "the first versions at least were flushed";
  EXPECT_GT(t.written_bytes, t.held_bytes) << "rewritten by compactions";
  EXPECT_GT(t.compaction_read_bytes, 0u);
  store.reset();
  store = OpenStore(o);
  ASSERT_NE(store, nullptr);
  EXPECT_GE(store->table_stats().held_bytes, data / 2) << "held counts the tables there are";
}

TEST_F(RowStoreTest, ArbitraryRowBytesAndRowPrefixes) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const RowStore::Family page = store->family("page");
  const std::string nul_row("a\0b", 3);
  const std::string nul_col("\0\xff", 2);
  const std::string long_row(300, 'a');  // a two-byte length varint
  RowBatch b;
  b.Put(page, "a", "c", "a-c");
  b.Put(page, "ab", "", "ab-");
  b.Put(page, "ab", "c", "ab-c");
  b.Put(page, std::string("a\0", 2), "", "a0-");
  b.Put(page, nul_row, nul_col, std::string("v\0v", 3));
  b.Put(page, "", "", "empty");
  b.Put(page, long_row, "x", "long");
  ASSERT_TRUE(store->Write(b).ok());

  EXPECT_EQ(ScanRow(*store, page, "a"), (Cells{{"c", "a-c"}}));
  EXPECT_EQ(ScanRow(*store, page, "ab"), (Cells{{"", "ab-"}, {"c", "ab-c"}}));
  EXPECT_EQ(ScanRow(*store, page, nul_row), (Cells{{nul_col, std::string("v\0v", 3)}}));
  EXPECT_EQ(ScanRow(*store, page, ""), (Cells{{"", "empty"}}));
  EXPECT_EQ(ScanRow(*store, page, std::string(299, 'a')), Cells{});
  EXPECT_EQ(ScanRow(*store, page, long_row), (Cells{{"x", "long"}}));
  std::string v;
  ASSERT_TRUE(store->Get(page, nul_row, nul_col, &v).ok());
  EXPECT_EQ(v, std::string("v\0v", 3));
  EXPECT_EQ(store->Get(page, "a", "", &v).code(), StatusCode::kNotFound);
  EXPECT_EQ(store->Get(page, "a\0", "", &v).code(), StatusCode::kNotFound);  // C string "a" != row "a\0"
}

TEST_F(RowStoreTest, ScanRowInColumnOrderAndStopsEarly) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const RowStore::Family member = store->family("member");
  RowBatch b;
  for (std::string c : {"d", "b", "a", "c", ""}) b.Put(member, "row", c, "v" + c);
  b.Put(member, "rox", "a", "other row");
  ASSERT_TRUE(store->Write(b).ok());
  EXPECT_EQ(ScanRow(*store, member, "row"), (Cells{{"", "v"}, {"a", "va"}, {"b", "vb"}, {"c", "vc"}, {"d", "vd"}}));

  std::vector<std::string> seen;
  ASSERT_TRUE(store->ScanRow(member, "row", [&](std::string_view c, std::string_view) {
    seen.emplace_back(c);
    return seen.size() < 2;
  }).ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"", "a"}));
  EXPECT_EQ(store->ScanRow(0, "row", [](std::string_view, std::string_view) { return true; }).code(),
            StatusCode::kInvalidArgument);
}

TEST_F(RowStoreTest, ScanFamilyInOrderAndIsolated) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const RowStore::Family page = store->family("page");
  const RowStore::Family member = store->family("member");
  const RowStore::Family meta = store->family("meta");
  RowBatch b;
  b.Put(member, "m2", "x", "1");
  b.Put(member, "m1", "y", "2");
  b.Put(member, "m1", "x", "3");
  b.Put(page, "p", "", "4");
  b.Put(meta, "z", "", "5");
  b.AddCounter("c", 1);  // counters are not cells
  ASSERT_TRUE(store->Write(b).ok());
  EXPECT_EQ(ScanFamily(*store, member), (std::vector<std::string>{"m1|x=3", "m1|y=2", "m2|x=1"}));
  EXPECT_EQ(ScanFamily(*store, page), (std::vector<std::string>{"p|=4"}));
  EXPECT_EQ(ScanFamily(*store, meta), (std::vector<std::string>{"z|=5"}));

  int calls = 0;
  ASSERT_TRUE(store->ScanFamily(member, [&](std::string_view, std::string_view, std::string_view) {
    return ++calls < 2;
  }).ok());
  EXPECT_EQ(calls, 2);
}

TEST_F(RowStoreTest, TtlWithManualClock) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const RowStore::Family page = store->family("page");
  RowBatch b;
  b.Put(page, "r", "lease", "x", /*ttl_millis=*/60'000);
  b.Put(page, "r", "long", "y", /*ttl_millis=*/120'000);
  b.Put(page, "r", "record", "z");
  ASSERT_TRUE(store->Write(b).ok());

  std::string v;
  clock_.Advance(59'999);
  ASSERT_TRUE(store->Get(page, "r", "lease", &v).ok());
  EXPECT_EQ(v, "x");
  EXPECT_EQ(ScanRow(*store, page, "r").size(), 3u);

  clock_.Advance(1);
  v = "untouched";
  EXPECT_EQ(store->Get(page, "r", "lease", &v).code(), StatusCode::kNotFound);
  EXPECT_EQ(v, "untouched");
  EXPECT_EQ(ScanRow(*store, page, "r"), (Cells{{"long", "y"}, {"record", "z"}}));
  EXPECT_EQ(ScanFamily(*store, page), (std::vector<std::string>{"r|long=y", "r|record=z"}));

  StatusOr<uint64_t> purged = store->PurgeExpired();
  ASSERT_TRUE(purged.ok());
  EXPECT_EQ(*purged, 1u);
  clock_.Set(0);  // even with the clock turned back, the purged cell stays gone
  EXPECT_EQ(store->Get(page, "r", "lease", &v).code(), StatusCode::kNotFound);
  ASSERT_TRUE(store->Get(page, "r", "long", &v).ok());

  clock_.Set(10'000'000);
  purged = store->PurgeExpired();
  ASSERT_TRUE(purged.ok());
  EXPECT_EQ(*purged, 1u);
  ASSERT_TRUE(store->Get(page, "r", "record", &v).ok());
  EXPECT_EQ(*store->PurgeExpired(), 0u);
}

TEST_F(RowStoreTest, PurgeSpansSeveralBatchesAndFamilies) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  RowBatch b;
  for (int i = 0; i < 25'000; ++i) b.Put(store->family("member"), "row" + std::to_string(i), "", "v", 10);
  b.Put(store->family("meta"), "m", "", "v", 10);
  b.Put(store->family("meta"), "keep", "", "v");
  ASSERT_TRUE(store->Write(b).ok());
  clock_.Advance(10);
  StatusOr<uint64_t> purged = store->PurgeExpired();
  ASSERT_TRUE(purged.ok());
  EXPECT_EQ(*purged, 25'001u);
  EXPECT_EQ(ScanFamily(*store, store->family("member")).size(), 0u);
  EXPECT_EQ(ScanFamily(*store, store->family("meta")), (std::vector<std::string>{"keep|=v"}));
}

TEST_F(RowStoreTest, CountersPersistAndMoveWithTheirBatch) {
  RowStoreOptions o = Options();
  o.env = nullptr;  // on disk, synced
  o.sync = true;
  {
    auto store = OpenStore(o);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->Counter("pages"), 0);
    RowBatch b;
    b.Put(store->family("page"), "a", "", "x");
    b.AddCounter("pages", 1);
    b.AddCounter("pages", 2);
    b.AddCounter("groups", -5);
    ASSERT_TRUE(store->Write(b).ok());
    EXPECT_EQ(store->Counter("pages"), 3);
    EXPECT_EQ(store->Counter("groups"), -5);
    b.Clear();
    b.AddCounter("pages", 10);
    ASSERT_TRUE(store->Write(b).ok());
    EXPECT_EQ(store->Counter("pages"), 13);
  }
  auto store = OpenStore(o);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Counter("pages"), 13);
  EXPECT_EQ(store->Counter("groups"), -5);
  EXPECT_EQ(store->Counter("other"), 0);
}


TEST_F(RowStoreTest, FailedWriteAppliesNothing) {
  RowStoreOptions o = FaultyOptions(/*async_writes=*/false);
  FaultyEnv& env = faulty_env_;
  {
    auto store = OpenStore(o);
    ASSERT_NE(store, nullptr);
    const RowStore::Family page = store->family("page");
    RowBatch b;
    b.Put(page, "a", "", "1");
    b.AddCounter("n", 1);
    ASSERT_TRUE(store->Write(b).ok());
    EXPECT_GT(store->DiskBytes(), 0u);  // measured through the injected Env

    env.fail_appends = true;
    b.Clear();
    b.Put(page, "a", "", "2");
    b.Put(page, "b", "", "2");
    b.AddCounter("n", 100);
    const Status s = store->Write(b);
    EXPECT_EQ(s.code(), StatusCode::kIoError) << s.ToString();
    EXPECT_NE(s.message().find(o.path), std::string::npos) << s.message();
    EXPECT_EQ(store->Counter("n"), 1);
    std::string v;
    ASSERT_TRUE(store->Get(page, "a", "", &v).ok());
    EXPECT_EQ(v, "1");
    EXPECT_EQ(store->Get(page, "b", "", &v).code(), StatusCode::kNotFound);

    env.fail_appends = false;
    b.Clear();
    b.AddCounter("n", 2);
    ASSERT_TRUE(store->Write(b).ok());
    EXPECT_EQ(store->Counter("n"), 3);
  }
  auto store = OpenStore(o);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Counter("n"), 3);
}

// With async_writes a Write returns before LevelDB has the batch, yet every read sees it (reads
// wait for the write in flight), WaitForWrites tells when it is in, and a write that fails is
// reported by the next call and every call after it.
TEST_F(RowStoreTest, AsyncWritesAreReadBackAndTheirFailureSticks) {
  RowStoreOptions o = FaultyOptions(/*async_writes=*/true);
  FaultyEnv& env = faulty_env_;
  {
    auto store = OpenStore(o);
    ASSERT_NE(store, nullptr);
    const RowStore::Family page = store->family("page"), member = store->family("member");
    for (int i = 0; i < 200; ++i) {
      RowBatch b;
      b.Put(page, "p" + std::to_string(i), "", std::to_string(i));
      b.Put(member, "g", "p" + std::to_string(i), "");
      b.AddCounter("n", 1);
      ASSERT_TRUE(store->Write(b).ok());
      EXPECT_EQ(store->Counter("n"), i + 1);
      std::string v;
      ASSERT_TRUE(store->Get(page, "p" + std::to_string(i), "", &v).ok()) << i;  // its own write
      EXPECT_EQ(v, std::to_string(i));
      EXPECT_EQ(ScanRow(*store, member, "g").size(), static_cast<size_t>(i) + 1);
    }
    ASSERT_TRUE(store->WaitForWrites().ok());

    env.fail_appends = true;
    RowBatch bad;
    bad.Put(page, "lost", "", "x");
    ASSERT_TRUE(store->Write(bad).ok());  // handed over: it fails after the return
    const Status waited = store->WaitForWrites();
    EXPECT_EQ(waited.code(), StatusCode::kIoError) << waited.ToString();
    env.fail_appends = false;
    std::string v;
    EXPECT_EQ(store->Get(page, "p1", "", &v).code(), StatusCode::kIoError);  // sticky
    EXPECT_EQ(store->Write(bad).code(), StatusCode::kIoError);
  }
  o.async_writes = false;
  auto store = OpenStore(o);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Counter("n"), 200);  // the failed batch is not there
  std::string v;
  EXPECT_EQ(store->Get(store->family("page"), "lost", "", &v).code(), StatusCode::kNotFound);
  ASSERT_TRUE(store->Get(store->family("page"), "p199", "", &v).ok());
}

// With async_writes a read waits for the pending writes only when one changes its row: here the
// first write's sync is held and a second is queued behind it, a read of another row returns at
// once, and reads of their rows (a cell of the first's, the second's row scanned) return the new
// values once the sync is let go.
TEST_F(RowStoreTest, AsyncWriteHoldsBackOnlyReadsOfItsRows) {
  RowStoreOptions o = FaultyOptions(/*async_writes=*/true);
  FaultyEnv& env = faulty_env_;
  auto store = OpenStore(o);
  ASSERT_NE(store, nullptr);
  const RowStore::Family page = store->family("page"), member = store->family("member");
  RowBatch first;
  first.Put(page, "other", "", "old");
  first.Put(page, "mine", "", "old");
  ASSERT_TRUE(store->Write(first).ok());
  ASSERT_TRUE(store->WaitForWrites().ok());

  env.hold_syncs = true;
  RowBatch second, third;
  second.Put(page, "mine", "", "new");
  third.Put(member, "g", "mine", "");
  ASSERT_TRUE(store->Write(second).ok());  // handed over; its sync is held
  ASSERT_TRUE(store->Write(third).ok());   // queued behind it
  // Another row: no wait (a read that waited would be let go after 10 s, and fail the test).
  std::atomic<bool> other_done{false};
  std::string other;
  size_t other_members = 1;
  std::thread other_reader([&] {
    EXPECT_TRUE(store->Get(page, "other", "", &other).ok());
    other_members = ScanRow(*store, member, "h").size();
    other_done = true;
  });
  for (int ms = 0; ms < 10000 && !other_done.load(); ++ms) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(other_done.load()) << "a read of another row waited for the write";
  if (!other_done.load()) env.hold_syncs = false;
  other_reader.join();
  env.hold_syncs = true;
  EXPECT_EQ(other, "old");
  EXPECT_EQ(other_members, 0u);

  std::atomic<bool> got{false};
  std::string mine;
  size_t members = 0;
  std::thread reader([&] {
    EXPECT_TRUE(store->Get(page, "mine", "", &mine).ok());
    members = ScanRow(*store, member, "g").size();
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got.load());  // still held back by the write
  env.hold_syncs = false;
  reader.join();
  EXPECT_EQ(mine, "new");
  EXPECT_EQ(members, 1u);
  ASSERT_TRUE(store->WaitForWrites().ok());
}

TEST_F(RowStoreTest, ReopenWithAppendedFamilies) {
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    RowBatch b;
    b.Put(store->family("meta"), "m", "", "kept");
    ASSERT_TRUE(store->Write(b).ok());
  }
  {
    auto store = OpenStore(Options({"page", "member", "meta", "extra"}));
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->family("extra"), 4);
    std::string v;
    ASSERT_TRUE(store->Get(store->family("meta"), "m", "", &v).ok());
    EXPECT_EQ(v, "kept");
  }
  // The stored list is now four long: the original three are no longer enough.
  const StatusOr<std::unique_ptr<RowStore>> s = RowStore::Open(Options());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(RowStoreTest, ReopenWithDifferentFamiliesRefused) {
  ASSERT_NE(OpenStore(), nullptr);
  for (std::vector<std::string> families : std::vector<std::vector<std::string>>{
           {"page", "meta", "member"}, {"page", "member"}, {"other"}, {"member", "page", "meta", "x"}}) {
    const StatusOr<std::unique_ptr<RowStore>> s = RowStore::Open(Options(families));
    ASSERT_EQ(s.status().code(), StatusCode::kFailedPrecondition) << s.status().ToString();
    EXPECT_NE(s.status().message().find("[page, member, meta]"), std::string::npos) << s.status().message();
    std::string requested;
    for (const std::string& f : families) requested += (requested.empty() ? "[" : ", ") + f;
    EXPECT_NE(s.status().message().find(requested + "]"), std::string::npos) << s.status().message();
  }
  EXPECT_NE(OpenStore(), nullptr);  // the refused opens changed nothing
}

TEST_F(RowStoreTest, UnreadableMetaRecordsAreCorruption) {
  int n = 0;
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"\xFE", "\x05pa"}, {"\xFF" "count", "abc"}}) {
    RowStoreOptions o = Options();
    o.path = (dir_ / std::to_string(n++)).string();
    leveldb::Options lo;
    lo.create_if_missing = true;
    lo.env = o.env;
    leveldb::DB* db = nullptr;
    ASSERT_TRUE(leveldb::DB::Open(lo, o.path, &db).ok());
    ASSERT_TRUE(db->Put(leveldb::WriteOptions(), key, value).ok());
    delete db;
    const StatusOr<std::unique_ptr<RowStore>> s = RowStore::Open(o);
    EXPECT_EQ(s.status().code(), StatusCode::kCorruption) << s.status().ToString();
  }
}

TEST_F(RowStoreTest, BadOptionsRefused) {
  RowStoreOptions on_disk = Options();
  on_disk.env = nullptr;
  std::vector<RowStoreOptions> bad(5, on_disk);
  bad[0].path.clear();
  bad[1].families.clear();
  bad[2].families.clear();
  for (int i = 0; i < 251; ++i) bad[2].families.push_back(std::string("f").append(std::to_string(i)));
  bad[3].families = {"page", "meta", "page"};
  bad[4].families = {"page", ""};
  for (const RowStoreOptions& o : bad) {
    EXPECT_EQ(RowStore::Open(o).status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_FALSE(fs::exists(dir_));

  RowStoreOptions max = Options();
  max.families.clear();
  for (int i = 0; i < 250; ++i) max.families.push_back(std::string("f").append(std::to_string(i)));
  auto store = OpenStore(max);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->family("f249"), 250);
}

TEST_F(RowStoreTest, BadFamilyIdsRefused) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  std::string v;
  EXPECT_EQ(store->Get(0, "a", "", &v).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Get(4, "a", "", &v).code(), StatusCode::kInvalidArgument);
  RowBatch b;
  b.Put(store->family("page"), "a", "", "x");
  b.Put(4, "a", "", "x");
  b.AddCounter("n", 1);
  EXPECT_EQ(store->Write(b).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Get(store->family("page"), "a", "", &v).code(), StatusCode::kNotFound);
  EXPECT_EQ(store->Counter("n"), 0);
}

TEST_F(RowStoreTest, SecondOpenWhileOpenIsIoError) {
  RowStoreOptions o = Options();
  o.env = nullptr;  // the memory Env does not lock
  auto store = OpenStore(o);
  ASSERT_NE(store, nullptr);
  const StatusOr<std::unique_ptr<RowStore>> second = RowStore::Open(o);
  EXPECT_EQ(second.status().code(), StatusCode::kIoError) << second.status().ToString();
  EXPECT_NE(second.status().message().find(dir_.string()), std::string::npos) << second.status().message();
  store.reset();
  EXPECT_NE(OpenStore(o), nullptr);
}

TEST_F(RowStoreTest, ConcurrentReadersSeeWholeBatches) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const RowStore::Family page = store->family("page");
  constexpr int kBatches = 400;
  std::atomic<bool> done{false};
  std::atomic<int> torn{0};
  std::atomic<int> counter_ahead{0};
  std::atomic<int> reads{0};
  std::atomic<int> started{0};

  auto reader = [&] {
    ++started;
    do {
      const int64_t counter = store->Counter("batches");
      std::vector<std::string> values;
      const Status s = store->ScanFamily(page, [&](std::string_view, std::string_view, std::string_view v) {
        values.emplace_back(v);
        return true;
      });
      if (!s.ok() || (values.size() != 0 && values.size() != 3)) ++torn;
      if (values.size() == 3 && (values[0] != values[1] || values[1] != values[2])) ++torn;
      const int64_t seen = values.empty() ? 0 : std::stoll(values[0]);
      if (counter > seen) ++counter_ahead;  // the counter never runs ahead of its batch's cells
      ++reads;
    } while (!done.load());
  };
  std::vector<std::thread> readers;
  for (int i = 0; i < 3; ++i) readers.emplace_back(reader);
  while (started.load() < 3) std::this_thread::yield();
  RowBatch b;
  for (int i = 1; i <= kBatches; ++i) {
    b.Clear();
    const std::string v = std::to_string(i);
    b.Put(page, "r1", "", v);
    b.Put(page, "r2", "x", v);
    b.Put(page, "r2", "y", v);
    b.AddCounter("batches", 1);
    const Status s = store->Write(b);
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (!s.ok()) break;
  }
  done = true;
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(counter_ahead.load(), 0);
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(store->Counter("batches"), kBatches);
}

// PutIfAbsent sets an absent (or expired) cell with its batch, and otherwise changes nothing and
// returns what is there.
TEST_F(RowStoreTest, PutIfAbsentSetsOnceAndReturnsWhatIsThere) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const RowStore::Family page = store->family("page");
  const RowStore::Family member = store->family("member");
  RowBatch also;
  also.Put(member, "ut", "a", "");
  also.AddCounter("threads", 1);
  std::string current;
  StatusOr<bool> r = store->PutIfAbsent(page, "t1", "", "first", &current, also);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(*r);
  EXPECT_EQ(current, "first");
  RowBatch also2;
  also2.Put(member, "ut", "b", "");
  also2.AddCounter("threads", 1);
  r = store->PutIfAbsent(page, "t1", "", "second", &current, also2);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);
  EXPECT_EQ(current, "first");
  EXPECT_EQ(ScanRow(*store, member, "ut"), (Cells{{"a", ""}}));  // the losing batch was dropped
  EXPECT_EQ(store->Counter("threads"), 1);
  std::string v;
  ASSERT_TRUE(store->Get(page, "t1", "", &v).ok());
  EXPECT_EQ(v, "first");

  // An expired cell is absent.
  RowBatch b;
  b.Put(page, "t2", "", "old", /*ttl_millis=*/10);
  ASSERT_TRUE(store->Write(b).ok());
  clock_.Advance(11);
  r = store->PutIfAbsent(page, "t2", "", "new", &current);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(*r);
  EXPECT_EQ(current, "new");

  // A bad family in `also` applies nothing.
  RowBatch bad;
  bad.Put(99, "x", "", "");
  EXPECT_FALSE(store->PutIfAbsent(page, "t3", "", "v", &current, bad).ok());
  EXPECT_EQ(store->Get(page, "t3", "", &v).code(), StatusCode::kNotFound);
}

// Many threads race for the same cells (directly and through the writer thread): each cell is set
// once, every thread reads back the winner's value, and only the winner's batch is applied.
TEST_F(RowStoreTest, PutIfAbsentUnderConcurrentWritersHasOneWinnerPerCell) {
  for (const bool async_writes : {false, true}) {
    SCOPED_TRACE(async_writes ? "async writes" : "direct writes");
    auto store = OpenStoreWriting(async_writes);
    ASSERT_NE(store, nullptr);
    const RowStore::Family page = store->family("page");
    const RowStore::Family member = store->family("member");
    constexpr int kThreads = 8, kCells = 300;
    std::vector<std::vector<std::string>> seen(kThreads, std::vector<std::string>(kCells));
    std::atomic<int> wins{0}, errors{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        RowBatch also;
        for (int c = 0; c < kCells; ++c) {
          const int cell = (c * 7 + t * 13) % kCells;  // threads meet on cells in different orders
          also.Clear();
          also.Put(member, "cell" + std::to_string(cell), "winner", std::to_string(t));
          also.AddCounter("wins", 1);
          std::string current;
          StatusOr<bool> r = store->PutIfAbsent(page, "cell" + std::to_string(cell), "", std::to_string(t), &current, also);
          if (!r.ok()) {
            ++errors;
            continue;
          }
          wins += *r;
          seen[t][cell] = current;
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(errors.load(), 0);
    EXPECT_EQ(wins.load(), kCells);
    EXPECT_EQ(store->Counter("wins"), kCells);
    for (int c = 0; c < kCells; ++c) {
      std::string v, w;
      ASSERT_TRUE(store->Get(page, "cell" + std::to_string(c), "", &v).ok());
      ASSERT_TRUE(store->Get(member, "cell" + std::to_string(c), "winner", &w).ok());
      EXPECT_EQ(v, w);
      for (int t = 0; t < kThreads; ++t) EXPECT_EQ(seen[t][c], v) << "thread " << t << " cell " << c;
    }
  }
}

// Writes that were not fsync'ed become durable with the next Sync, across LevelDB's memtable
// switches (a small write buffer makes many), and a crash that drops what no Sync covered loses
// none of them; a conditional write comes back whole or not at all.
TEST_F(RowStoreTest, SyncMakesEveryEarlierWriteDurableAcrossLogSwitches) {
  RowStoreOptions o = FaultyOptions(/*async_writes=*/false);
  o.sync = false;
  o.write_buffer_bytes = 64 << 10;
  std::mt19937_64 rng(7);
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    faulty_env_.Recover();
    auto store = OpenStore(o);
    ASSERT_NE(store, nullptr);
    const RowStore::Family page = store->family("page");
    const RowStore::Family member = store->family("member");
    const std::string value(200, 'v');
    int synced = 0, attempted = 0;
    faulty_env_.CrashAfterAppends(2000 + static_cast<int64_t>(rng() % 3000));
    auto row_name = [&](int i) { return std::string("r").append(std::to_string(round)).append("/").append(std::to_string(i)); };
    for (int i = 0; i < 5000; ++i) {
      RowBatch also;
      const std::string row = row_name(i);
      also.Put(member, row, "", value);
      also.set_durable(false);
      std::string current;
      ++attempted;
      if (!store->PutIfAbsent(page, row, "", value, &current, also).ok()) break;
      if (i % 50 == 49) {
        if (!store->Sync().ok()) break;
        synced = i + 1;
      }
    }
    store.reset();
    faulty_env_.DropUnsyncedData(&rng);
    faulty_env_.Recover();
    store = OpenStore(o);
    ASSERT_NE(store, nullptr);
    int found = 0;
    for (int i = 0; i < attempted; ++i) {
      const std::string row = row_name(i);
      std::string a, b;
      const bool has_a = store->Get(page, row, "", &a).ok();
      const bool has_b = store->Get(member, row, "", &b).ok();
      EXPECT_EQ(has_a, has_b) << row << ": half a conditional write";
      if (i < synced) {
        EXPECT_TRUE(has_a) << row << " was synced and is lost";
      }
      found += has_a;
    }
    EXPECT_GE(found, synced);
    EXPECT_GT(synced, 0);
  }
}

// A snapshot reads rows and counters of one moment while writes go on: each batch below moves a
// cell into a row and adds one to the counter, so at every snapshot the row's cells equal it.
// Lazy counters: kept in memory by each write and written by Sync (its fsync'ed write) or at
// close; a crash keeps the counters of the last flush while cells written since may survive.
TEST_F(RowStoreTest, LazyCountersAreWrittenBySyncAndAtClose) {
  RowStoreOptions o = Options();
  o.env = &faulty_env_;
  o.sync = true;  // every cell write fsync'ed: only the counters lag
  o.lazy_counters = true;
  {
    auto store = OpenStore(o);
    ASSERT_NE(store, nullptr);
    const RowStore::Family page = store->family("page");
    RowBatch b;
    b.Put(page, "a", "", "x");
    b.AddCounter("pages", 1);
    ASSERT_TRUE(store->Write(b).ok());
    b.Clear();
    b.AddCounter("pages", 2);  // counters alone: nothing for LevelDB
    ASSERT_TRUE(store->Write(b).ok());
    EXPECT_EQ(store->Counter("pages"), 3);
    ASSERT_TRUE(store->Sync().ok());
    b.Clear();
    b.Put(page, "b", "", "y");
    b.AddCounter("pages", 10);
    ASSERT_TRUE(store->Write(b).ok());
    EXPECT_EQ(store->Counter("pages"), 13);
    faulty_env_.CrashAfterAppends(0);  // the flush at close fails: a crash after the write
  }
  faulty_env_.DropUnsyncedData();
  faulty_env_.Recover();
  {
    auto store = OpenStore(o);
    ASSERT_NE(store, nullptr);
    std::string v;
    EXPECT_TRUE(store->Get(store->family("page"), "b", "", &v).ok()) << "the cell was synced";
    EXPECT_EQ(store->Counter("pages"), 3) << "the counter as the last Sync wrote it";
    RowBatch b;
    b.AddCounter("pages", 4);
    ASSERT_TRUE(store->Write(b).ok());
  }  // closed: flushed
  auto store = OpenStore(o);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Counter("pages"), 7);
}

TEST_F(RowStoreTest, SnapshotsSeeRowsAndCountersOfOneMoment) {
  for (const bool lazy : {false, true}) {
    SCOPED_TRACE(lazy ? "lazy counters" : "counters with their writes");
    RowStoreOptions o = Options();
    o.path = (dir_ / (lazy ? "lazy" : "eager")).string();
    o.lazy_counters = lazy;
    SnapshotsSeeRowsAndCountersOfOneMoment(o);
  }
}

void RowStoreTest::SnapshotsSeeRowsAndCountersOfOneMoment(const RowStoreOptions& o) {
  auto store = OpenStore(o);
  ASSERT_NE(store, nullptr);
  const RowStore::Family member = store->family("member");
  std::atomic<bool> done{false};
  std::atomic<int> mismatches{0}, snapshots{0};
  std::thread reader([&] {
    while (!done.load()) {
      // With lazy counters, every other snapshot takes the counter from memory (no flush).
      auto snap = o.lazy_counters && snapshots.load() % 2 ? store->NewSnapshot({"members"}) : store->NewSnapshot();
      int cells = 0;
      EXPECT_TRUE(snap->ScanRow(member, "team", [&](std::string_view, std::string_view) {
        ++cells;
        return true;
      }).ok());
      StatusOr<int64_t> c = snap->Counter("members");
      if (!c.ok() || *c != cells) ++mismatches;
      ++snapshots;
    }
  });
  for (int i = 0; i < 500; ++i) {
    RowBatch b;
    b.Put(member, "team", std::string("u").append(std::to_string(i)), "");
    b.AddCounter("members", 1);
    ASSERT_TRUE(store->Write(b).ok());
    if (i % 3 == 0) {  // and an increment alone, as a healer applies, nets out with its removal
      RowBatch h;
      h.AddCounter("members", 5);
      ASSERT_TRUE(store->Write(h).ok());
      h.Clear();
      h.AddCounter("members", -5);
      h.Put(member, "team", "tmp", "");
      h.Delete(member, "team", "tmp");
      ASSERT_TRUE(store->Write(h).ok());
    }
  }
  while (snapshots.load() < 10) std::this_thread::yield();
  done = true;
  reader.join();
  auto snap = store->NewSnapshot();
  RowBatch later;
  later.AddCounter("members", 1);
  ASSERT_TRUE(store->Write(later).ok());
  StatusOr<int64_t> at_snap = snap->Counter("members");
  ASSERT_TRUE(at_snap.ok());
  EXPECT_EQ(*at_snap, 500);
  EXPECT_EQ(store->Counter("members"), 501);
  StatusOr<int64_t> never = snap->Counter("never");
  ASSERT_TRUE(never.ok());
  EXPECT_EQ(*never, 0);
  auto taken = store->NewSnapshot({"members"});
  ASSERT_TRUE(taken->Counter("members").ok());
  EXPECT_EQ(*taken->Counter("members"), 501);
  if (o.lazy_counters) {
    EXPECT_EQ(taken->Counter("never").status().code(), StatusCode::kFailedPrecondition);
  }
}

TEST_F(RowStoreTest, ScanCountersByPrefixInNameOrder) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  RowBatch b;
  b.AddCounter("dc/t1/a.com", 3);
  b.AddCounter("dc/t1/b.com", -1);
  b.AddCounter("dc/t2/a.com", 7);
  b.AddCounter("other", 1);
  ASSERT_TRUE(store->Write(b).ok());
  std::vector<std::pair<std::string, int64_t>> seen;
  store->ScanCounters("dc/t1/", [&](std::string_view n, int64_t v) {
    seen.emplace_back(n, v);
    return true;
  });
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, int64_t>>{{"dc/t1/a.com", 3}, {"dc/t1/b.com", -1}}));
  int calls = 0;
  store->ScanCounters("dc/", [&](std::string_view, int64_t) { return ++calls < 2; });
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace neardup
