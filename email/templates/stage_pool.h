// StagePool: one stage of a SEDA pipeline (Welsh et al.; the Crusher paper's Section 4.4): a
// fixed number of threads over a bounded queue, with admission control. Work offered while the
// queue is full is dropped and counted (TryRun), or waits for room (Run: for a producer that
// must not lose work, such as a file being replayed).
//
//   StagePool cluster("nd-email-clu", 4, 4096);
//   if (!cluster.TryRun([=] { Process(e); })) ...  // dropped, counted in dropped()
//   cluster.Drain();                               // every accepted task has run
//
// With 0 threads a task runs at once on the caller's thread (deterministic replays).
//
// Thread safety: every method may be called from any thread; tasks must not call Drain on their
// own pool. The destructor drains and joins.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace neardup::email {

class StagePool {
 public:
  StagePool(std::string name, int threads, size_t queue_capacity);
  ~StagePool();
  StagePool(const StagePool&) = delete;
  StagePool& operator=(const StagePool&) = delete;

  // Queues the task unless the queue holds queue_capacity tasks: then drops it and returns false.
  bool TryRun(std::function<void()> task);
  // Queues the task, waiting for room.
  void Run(std::function<void()> task);
  // Waits until the queue is empty and no task is running.
  void Drain();

  int threads() const { return static_cast<int>(workers_.size()); }
  uint64_t accepted() const { return accepted_.load(); }
  uint64_t dropped() const { return dropped_.load(); }

 private:
  void Loop(int w);
  std::string name_;
  size_t capacity_;
  std::mutex mu_;
  std::condition_variable work_cv_, room_cv_, idle_cv_;
  std::deque<std::function<void()>> queue_;
  int running_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> accepted_{0}, dropped_{0};
};

}  // namespace neardup::email
