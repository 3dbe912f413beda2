#include "storage/leveldb_threads.h"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <future>
#include <string>

#include <leveldb/env.h>

#include "common/thread_priority.h"

namespace neardup {
namespace {

int ProcessNice() { return getpriority(PRIO_PROCESS, static_cast<id_t>(getpid())); }

TEST(LevelDbThreads, BackgroundThreadIsLoweredOnce) {
  const int base = ProcessNice();
  LowerLevelDbBackgroundPriority(4);
  LowerLevelDbBackgroundPriority(9);  // the first call decided
  // Tasks run in order on the one background thread: this one sees the lowered priority.
  std::promise<int> seen;
  leveldb::Env::Default()->Schedule([](void* p) { static_cast<std::promise<int>*>(p)->set_value(ThreadNiceValue()); }, &seen);
  EXPECT_EQ(seen.get_future().get(), std::min(19, base + 4));
  EXPECT_EQ(ThreadNiceValue(), base);
}

TEST(LevelDbThreads, BackgroundThreadIsNamed) {
  NameLevelDbBackgroundThread();
  std::promise<std::string> seen;
  leveldb::Env::Default()->Schedule([](void* p) { static_cast<std::promise<std::string>*>(p)->set_value(ThisThreadName()); },
                                    &seen);
  EXPECT_EQ(seen.get_future().get(), "nd-leveldb");
}

}  // namespace
}  // namespace neardup
