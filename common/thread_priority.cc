#include "common/thread_priority.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

#include <leveldb/env.h>
#include <spdlog/spdlog.h>

namespace neardup {
namespace {

id_t ThreadId() { return static_cast<id_t>(syscall(SYS_gettid)); }

int NiceOf(id_t id) {
  errno = 0;
  const int v = getpriority(PRIO_PROCESS, id);  // -1 is a valid nice value: errno tells
  return errno == 0 ? v : 0;
}

}  // namespace

int ThreadNiceValue() { return NiceOf(ThreadId()); }

Status LowerThreadPriority(int delta) {
  if (delta > 19) return InvalidArgument("thread priority: nice delta " + std::to_string(delta) + " is above 19");
  if (delta <= 0) return Status::Ok();
  const int target = std::min(19, NiceOf(static_cast<id_t>(getpid())) + delta);
  if (target <= ThreadNiceValue()) return Status::Ok();  // already at least that low
  if (setpriority(PRIO_PROCESS, ThreadId(), target) != 0) {
    return IoError("thread priority: cannot set nice " + std::to_string(target) + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

// Once per process: a function-local static's initialisation (thread-safe, and plain to
// ThreadSanitizer, which misreads libstdc++'s std::call_once as unlocking a mutex it never locked).
void LowerLevelDbBackgroundPriority(int delta) {
  if (delta <= 0) return;
  static int chosen = 0;
  [[maybe_unused]] static const bool scheduled = [delta] {
    chosen = std::min(delta, 19);
    leveldb::Env::Default()->Schedule(
        [](void*) {
          if (Status s = LowerThreadPriority(chosen); !s.ok()) spdlog::debug("{}", s.ToString());
        },
        nullptr);
    return true;
  }();
}

void NameThisThread(std::string_view name) {
  char buf[16] = {};
  name.copy(buf, sizeof buf - 1);
  (void)pthread_setname_np(pthread_self(), buf);
}

void NameLevelDbBackgroundThread() {
  [[maybe_unused]] static const bool scheduled = [] {
    leveldb::Env::Default()->Schedule([](void*) { NameThisThread("nd-leveldb"); }, nullptr);
    return true;
  }();
}

std::string ThisThreadName() {
  char buf[16] = {};
  if (pthread_getname_np(pthread_self(), buf, sizeof buf) != 0) return {};
  return buf;
}

}  // namespace neardup
