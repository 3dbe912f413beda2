// RunOnThreads: the fork-join every parallel stage uses. f(w) runs once for each worker w in
// 0..threads-1: workers 1.. on new threads named "<name>-<w>" (common/thread_priority.h), worker 0
// on the calling thread, after the others have started; returns when all have finished.
//
//   RunOnThreads(4, "nd-sign", [&](int w) { if (w == 0) ReadAhead(); Work(w); });
//
// threads <= 1 runs f(0) alone. f must be safe to call concurrently with itself.
#pragma once

#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/thread_priority.h"

namespace neardup {

template <typename F>
void RunOnThreads(int threads, std::string_view name, F&& f) {
  std::vector<std::thread> pool;
  for (int w = 1; w < threads; ++w) {
    pool.emplace_back([&f, w, label = std::string(name) + "-" + std::to_string(w)] {
      NameThisThread(label);
      f(w);
    });
  }
  f(0);
  for (auto& t : pool) t.join();
}

}  // namespace neardup
