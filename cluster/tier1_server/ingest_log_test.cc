#include "cluster/tier1_server/ingest_log.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>
#include <vector>

#include "storage/fault_file_env.h"
#include "testing/files.h"
#include "testing/temp_dir.h"

namespace neardup::cluster {
namespace {

using std::chrono::milliseconds;

// Appends and waits for the acknowledgement: (status, end offset).
std::pair<Status, uint64_t> AppendAndWait(IngestLog& log, const std::string& lines, uint64_t records) {
  std::promise<std::pair<Status, uint64_t>> p;
  Status s = log.Append(lines, records, [&](const Status& st, uint64_t end) { p.set_value({st, end}); });
  if (!s.ok()) return {s, 0};
  return p.get_future().get();
}

TEST(IngestLog, AcknowledgesInOrderOnceDurable) {
  test::TempDir dir;
  auto log = IngestLog::Open({.path = dir.File("log"), .max_pending_bytes = 1 << 20, .sync = true});
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  auto [s1, e1] = AppendAndWait(**log, "{\"a\":1}\n", 1);
  ASSERT_TRUE(s1.ok());
  EXPECT_EQ(e1, 8u);
  auto [s2, e2] = AppendAndWait(**log, "{\"b\":2}\n{\"c\":3}\n", 2);
  ASSERT_TRUE(s2.ok());
  EXPECT_EQ(e2, 24u);
  EXPECT_EQ((*log)->durable_bytes(), 24u);
  EXPECT_EQ(test::ReadFile(dir.File("log")), "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n");
  const IngestLog::Stats st = (*log)->stats();
  EXPECT_EQ(st.records, 3u);
  EXPECT_EQ(st.appends, 2u);
  EXPECT_TRUE((*log)->Append("no newline", 1, [](const Status&, uint64_t) {}).code() == StatusCode::kInvalidArgument);
}

// Many writers at once: every append acknowledged, each line whole, fewer syncs than appends.
TEST(IngestLog, OneSyncCoversManyAppends) {
  test::TempDir dir;
  auto log = IngestLog::Open({.path = dir.File("log"), .max_pending_bytes = 64 << 20, .sync = true});
  ASSERT_TRUE(log.ok());
  constexpr int kThreads = 8, kEach = 200;
  std::atomic<int> acked{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        auto [s, end] = AppendAndWait(**log, "{\"t\":" + std::to_string(t) + ",\"i\":" + std::to_string(i) + "}\n", 1);
        if (s.ok() && end > 0) ++acked;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(acked.load(), kThreads * kEach);
  const IngestLog::Stats st = (*log)->stats();
  EXPECT_EQ(st.appends, static_cast<uint64_t>(kThreads * kEach));
  EXPECT_LT(st.syncs, st.appends);
  std::ifstream in(dir.File("log"));
  int lines = 0;
  for (std::string l; std::getline(in, l);) lines += l.front() == '{' && l.back() == '}';
  EXPECT_EQ(lines, kThreads * kEach);
}

TEST(IngestLog, ATornTailIsCutAtOpen) {
  test::TempDir dir;
  {
    std::ofstream(dir.File("log")) << "{\"a\":1}\n{\"b\":2}\n{\"c\":";  // a crash in the middle of a write
  }
  auto log = IngestLog::Open({.path = dir.File("log"), .max_pending_bytes = 1 << 20, .sync = true});
  ASSERT_TRUE(log.ok());
  EXPECT_EQ((*log)->durable_bytes(), 16u);
  auto [s, end] = AppendAndWait(**log, "{\"d\":4}\n", 1);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(end, 24u);
  EXPECT_EQ(test::ReadFile(dir.File("log")), "{\"a\":1}\n{\"b\":2}\n{\"d\":4}\n");
}

// The log's entry in its directory is made durable at Open, before anything is acknowledged: a
// directory sync that fails fails Open, naming the directory; without `sync` none is attempted.
TEST(IngestLog, OpenSyncsTheLogsDirectory) {
  test::TempDir dir;
  FaultFileEnv env(FileEnv::Default());
  env.FailSyncs(true);
  auto refused = IngestLog::Open({.path = dir.File("log"), .sync = true, .env = &env});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kIoError);
  EXPECT_NE(refused.status().message().find("sync directory " + dir.str()), std::string::npos)
      << refused.status().ToString();
  EXPECT_EQ(env.failed_syncs(), 1u);
  auto unsynced = IngestLog::Open({.path = dir.File("log"), .sync = false, .env = &env});
  EXPECT_TRUE(unsynced.ok()) << unsynced.status().ToString();
  EXPECT_EQ(env.failed_syncs(), 1u);
  unsynced->reset();
  env.FailSyncs(false);
  auto log = IngestLog::Open({.path = dir.File("log"), .sync = true, .env = &env});
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  auto [s, end] = AppendAndWait(**log, "{}\n", 1);
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(end, 3u);
}

TEST(IngestLog, RefusesPastItsPendingBoundAndAfterClose) {
  test::TempDir dir;
  auto log = IngestLog::Open({.path = dir.File("log"), .max_pending_bytes = 64, .sync = true});
  ASSERT_TRUE(log.ok());
  // A first append larger than the bound is taken (else it could never be); a second waiting
  // behind it is refused while the first is pending, or taken once it is written.
  std::atomic<int> done{0};
  ASSERT_TRUE((*log)->Append(std::string(100, 'x') + "\n", 1, [&](const Status&, uint64_t) { ++done; }).ok());
  Status second = (*log)->Append(std::string(10, 'y') + "\n", 1, [&](const Status&, uint64_t) { ++done; });
  EXPECT_TRUE(second.ok() || second.code() == StatusCode::kResourceExhausted) << second.ToString();
  (*log)->Close();
  EXPECT_EQ(done.load(), second.ok() ? 2 : 1);
  EXPECT_EQ((*log)->Append("{}\n", 1, [](const Status&, uint64_t) {}).code(), StatusCode::kFailedPrecondition);
}

TEST(IngestLog, WaitDurableReturnsWhenBytesArrive) {
  test::TempDir dir;
  auto log = IngestLog::Open({.path = dir.File("log"), .max_pending_bytes = 1 << 20, .sync = false});
  ASSERT_TRUE(log.ok());
  std::thread writer([&] {
    std::this_thread::sleep_for(milliseconds(50));
    (void)(*log)->Append("{}\n", 1, [](const Status&, uint64_t) {});
  });
  const auto t0 = std::chrono::steady_clock::now();
  (*log)->WaitDurable(0, t0 + std::chrono::seconds(10));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ((*log)->durable_bytes(), 3u);
  writer.join();
}

}  // namespace
}  // namespace neardup::cluster
