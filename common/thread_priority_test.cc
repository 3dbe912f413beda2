#include "common/thread_priority.h"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <future>
#include <thread>

namespace neardup {
namespace {

int ProcessNice() { return getpriority(PRIO_PROCESS, static_cast<id_t>(getpid())); }

TEST(ThreadPriority, LowersOnlyTheCallingThreadAndWhatItStartsAfterwards) {
  const int base = ProcessNice();
  int lowered = -100, child = -100;
  std::thread t([&] {
    ASSERT_TRUE(LowerThreadPriority(3).ok());
    lowered = ThreadNiceValue();
    std::thread c([&] { child = ThreadNiceValue(); });
    c.join();
  });
  t.join();
  EXPECT_EQ(lowered, std::min(19, base + 3));
  EXPECT_EQ(child, lowered);
  EXPECT_EQ(ThreadNiceValue(), base);  // the caller's own priority is untouched
}

TEST(ThreadPriority, DeltaIsRelativeToTheProcessAndNeverRaises) {
  const int base = ProcessNice();
  int first = -100, second = -100;
  std::thread t([&] {
    ASSERT_TRUE(LowerThreadPriority(5).ok());
    first = ThreadNiceValue();
    ASSERT_TRUE(LowerThreadPriority(2).ok());  // asks for less: stays where it is
    second = ThreadNiceValue();
  });
  t.join();
  EXPECT_EQ(first, std::min(19, base + 5));
  EXPECT_EQ(second, first);
}

TEST(ThreadPriority, BadDeltaIsRefusedAndZeroDoesNothing) {
  const Status s = LowerThreadPriority(20);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("20"), std::string::npos);
  EXPECT_TRUE(LowerThreadPriority(0).ok());
  EXPECT_TRUE(LowerThreadPriority(-4).ok());
  EXPECT_EQ(ThreadNiceValue(), ProcessNice());
}

TEST(ThreadName, NamesOnlyTheCallingThreadAndCutsLongNames) {
  const std::string before = ThisThreadName();
  std::string named, cut;
  std::thread([&] {
    NameThisThread("nd-test");
    named = ThisThreadName();
    NameThisThread("a-name-longer-than-fifteen-bytes");
    cut = ThisThreadName();
  }).join();
  EXPECT_EQ(named, "nd-test");
  EXPECT_EQ(cut, "a-name-longer-t");
  EXPECT_EQ(ThisThreadName(), before);
}

}  // namespace
}  // namespace neardup
