// WorkerPool: RunOnThreads (common/run_on_threads.h) with threads that stay, for a fork-join
// that runs once per batch. Starting and ending threads every batch costs more than the work of a
// small batch: a clone, a fresh stack to fault in, and a fresh malloc thread cache to fill and
// hand back (at 1M records the pipeline started about 11,000 threads).
//
//   WorkerPool pool(4, "nd-compare");            // starts nd-compare-1 .. nd-compare-3
//   pool.Run([&](int w) { Work(w); });          // w = 0 on the calling thread, 1..3 on the pool's
//
// Thread safety: Run may be called from any thread; calls from several threads run one after the
// other (each waits for the one before to finish). f must not call Run on the same pool. The
// destructor joins the workers; no Run may be in progress then.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

namespace neardup {

class WorkerPool {
 public:
  // threads - 1 workers named "<name>-<w>" (w = 1..threads-1), started now; threads <= 1 starts
  // none, and Run calls f(0) alone. The workers inherit the creating thread's priority.
  WorkerPool(int threads, std::string_view name);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int threads() const { return threads_; }

  // f(w) once for each w in 0..threads()-1, w = 0 on the calling thread (after the workers were
  // woken); returns when every call has returned. f must be safe to call concurrently with itself.
  template <typename F>
  void Run(F&& f) {
    using Fn = std::remove_reference_t<F>;
    RunErased([](void* ctx, int w) { (*static_cast<Fn*>(ctx))(w); }, &f);
  }

 private:
  void RunErased(void (*call)(void*, int), void* ctx);
  void Loop(int w);

  const int threads_;
  std::mutex run_mu_;  // serialises Run
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  uint64_t generation_ = 0;  // Runs handed to the workers so far
  int pending_ = 0;          // workers still running the current Run
  bool stop_ = false;
  void (*call_)(void*, int) = nullptr;
  void* ctx_ = nullptr;
  std::vector<std::thread> workers_;
};

}  // namespace neardup
