#include "email/templates/stage_pool.h"

#include "common/thread_priority.h"

namespace neardup::email {

StagePool::StagePool(std::string name, int threads, size_t queue_capacity)
    : name_(std::move(name)), capacity_(queue_capacity < 1 ? 1 : queue_capacity) {
  for (int w = 0; w < threads; ++w) workers_.emplace_back([this, w] { Loop(w); });
}

StagePool::~StagePool() {
  Drain();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

bool StagePool::TryRun(std::function<void()> task) {
  if (workers_.empty()) {
    ++accepted_;
    task();
    return true;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() >= capacity_) {
      ++dropped_;
      return false;
    }
    queue_.push_back(std::move(task));
  }
  ++accepted_;
  work_cv_.notify_one();
  return true;
}

void StagePool::Run(std::function<void()> task) {
  if (workers_.empty()) {
    ++accepted_;
    task();
    return;
  }
  {
    std::unique_lock<std::mutex> lock(mu_);
    room_cv_.wait(lock, [&] { return queue_.size() < capacity_; });
    queue_.push_back(std::move(task));
  }
  ++accepted_;
  work_cv_.notify_one();
}

void StagePool::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return queue_.empty() && running_ == 0; });
}

void StagePool::Loop(int w) {
  NameThisThread(name_ + "-" + std::to_string(w));
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    lock.unlock();
    room_cv_.notify_one();
    task();
    lock.lock();
    --running_;
    if (queue_.empty() && running_ == 0) idle_cv_.notify_all();
  }
}

}  // namespace neardup::email
