#include "pipeline/batch.h"

namespace neardup::pipeline::internal {

bool BatchQueue::Push(std::unique_ptr<Batch> b) {
  std::unique_lock lock(mu_);
  not_full_.wait(lock, [&] { return q_.size() < capacity_ || closed_; });
  if (closed_) return false;
  q_.push_back(std::move(b));
  not_empty_.notify_one();
  return true;
}

std::unique_ptr<Batch> BatchQueue::TakeLocked() {
  auto b = std::move(q_.front());
  q_.pop_front();
  not_full_.notify_one();
  return b;
}

std::unique_ptr<Batch> BatchQueue::Pop() {
  std::unique_lock lock(mu_);
  not_empty_.wait(lock, [&] { return !q_.empty() || closed_; });
  if (q_.empty()) return nullptr;
  return TakeLocked();
}

std::unique_ptr<Batch> BatchQueue::PopFor(std::chrono::duration<double> timeout, bool* timed_out) {
  std::unique_lock lock(mu_);
  *timed_out = !not_empty_.wait_for(lock, timeout, [&] { return !q_.empty() || closed_; });
  if (q_.empty()) return nullptr;
  return TakeLocked();
}

bool BatchQueue::Closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

bool BatchQueue::Waiting() const {
  std::lock_guard lock(mu_);
  return !q_.empty();
}

void BatchQueue::Close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  not_empty_.notify_all();
  not_full_.notify_all();
}

}  // namespace neardup::pipeline::internal
