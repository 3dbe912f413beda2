#include "storage/leveldb_threads.h"

#include <algorithm>

#include <leveldb/env.h>
#include <spdlog/spdlog.h>

#include "common/status.h"
#include "common/thread_priority.h"

namespace neardup {

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

void NameLevelDbBackgroundThread() {
  [[maybe_unused]] static const bool scheduled = [] {
    leveldb::Env::Default()->Schedule([](void*) { NameThisThread("nd-leveldb"); }, nullptr);
    return true;
  }();
}

}  // namespace neardup
