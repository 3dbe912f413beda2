#include "common/thread_priority.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

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

void NameThisThread(std::string_view name) {
  char buf[16] = {};
  name.copy(buf, sizeof buf - 1);
  (void)pthread_setname_np(pthread_self(), buf);
}

std::string ThisThreadName() {
  char buf[16] = {};
  if (pthread_getname_np(pthread_self(), buf, sizeof buf) != 0) return {};
  return buf;
}

}  // namespace neardup
