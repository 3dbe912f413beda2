#include "common/worker_pool.h"

#include <string>

#include "common/thread_priority.h"

namespace neardup {

WorkerPool::WorkerPool(int threads, std::string_view name) : threads_(threads < 1 ? 1 : threads) {
  for (int w = 1; w < threads_; ++w) {
    workers_.emplace_back([this, w, label = std::string(name) + "-" + std::to_string(w)] {
      NameThisThread(label);
      Loop(w);
    });
  }
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void WorkerPool::RunErased(void (*call)(void*, int), void* ctx) {
  if (workers_.empty()) {
    call(ctx, 0);
    return;
  }
  std::lock_guard run(run_mu_);
  {
    std::lock_guard lock(mu_);
    call_ = call;
    ctx_ = ctx;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  start_cv_.notify_all();
  call(ctx, 0);
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  call_ = nullptr;
  ctx_ = nullptr;
}

void WorkerPool::Loop(int w) {
  uint64_t seen = 0;
  std::unique_lock lock(mu_);
  for (;;) {
    start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    void (*call)(void*, int) = call_;
    void* ctx = ctx_;
    lock.unlock();
    call(ctx, w);
    lock.lock();
    if (--pending_ == 0) done_cv_.notify_one();
  }
}

}  // namespace neardup
