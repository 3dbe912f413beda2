// Batcher<T>: accumulates items and hands them on in batches that close at `max_items` items or
// `max_delay` after the batch's first item, whichever comes first.
//
// Tier 2 compares pages in batches to amortise loading signatures (the paper, Section 5.1); Tier 1
// feeds a Batcher with the pages it cannot decide and the sink runs CompareBatch + Apply.
//
//   Batcher<pb::PageSignature> batcher({.max_items = 1000, .max_delay = 50ms},
//       [&](std::vector<pb::PageSignature>&& pages, BatchClose why) { ... });
//   batcher.Add(std::move(sig));   // may run the sink when the batch fills
//   batcher.Close();               // the last partial batch goes out; later Adds fail
//
// Delivery: batches reach the sink one at a time and in the order their items were added. A batch
// filled by Add runs the sink on the adding thread before Add returns (back-pressure on a slow
// sink); a batch closed by its deadline runs the sink on the Batcher's timer thread.
//
// Thread safety: Add, Flush and Close may be called from any thread. The sink must not call back
// into the same Batcher.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "common/status.h"

namespace neardup::tier2 {

struct BatcherOptions {
  size_t max_items = 1000;                                 // B: >= 1
  std::chrono::milliseconds max_delay{50};                 // D: > 0
};

enum class BatchClose { kFull, kDeadline, kFlush };

template <typename T>
class Batcher {
 public:
  using Sink = std::function<void(std::vector<T>&& batch, BatchClose why)>;

  // Checks options (InvalidArgument naming the option) and starts the timer thread.
  static StatusOr<std::unique_ptr<Batcher>> Create(BatcherOptions options, Sink sink) {
    if (options.max_items < 1) return InvalidArgument("batcher: max_items must be >= 1");
    if (options.max_delay.count() <= 0) return InvalidArgument("batcher: max_delay must be > 0 ms");
    if (!sink) return InvalidArgument("batcher: no sink");
    return std::unique_ptr<Batcher>(new Batcher(options, std::move(sink)));
  }
  ~Batcher() { Close(); }
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // FailedPrecondition after Close().
  Status Add(T item) {
    {
      std::lock_guard lock(mu_);
      if (closed_) return FailedPrecondition("batcher: Add after Close");
      if (items_.empty()) {
        deadline_ = std::chrono::steady_clock::now() + options_.max_delay;
        cv_.notify_all();
      }
      items_.push_back(std::move(item));
      if (items_.size() < options_.max_items) return Status::Ok();
    }
    Deliver(BatchClose::kFull, [&] { return items_.size() >= options_.max_items; });
    return Status::Ok();
  }

  // Sends the current batch now, if it holds anything.
  void Flush() {
    Deliver(BatchClose::kFlush, [&] { return !items_.empty(); });
  }

  // Flushes and stops the timer thread. Idempotent.
  void Close() {
    {
      std::lock_guard lock(mu_);
      if (closed_) return;
      closed_ = true;
      cv_.notify_all();
    }
    if (timer_.joinable()) timer_.join();
    Flush();
  }

  size_t pending() const {
    std::lock_guard lock(mu_);
    return items_.size();
  }

 private:
  Batcher(BatcherOptions options, Sink sink) : options_(options), sink_(std::move(sink)) {
    timer_ = std::thread([this] { TimerLoop(); });
  }

  // Takes the batch when `ready()` holds (under mu_) and runs the sink, in order.
  template <typename Ready>
  void Deliver(BatchClose why, Ready ready) {
    std::lock_guard order(sink_mu_);
    std::vector<T> batch;
    {
      std::lock_guard lock(mu_);
      if (!ready()) return;
      const size_t n = std::min(items_.size(), options_.max_items);
      if (n == items_.size()) {
        batch.swap(items_);
      } else {
        batch.assign(std::make_move_iterator(items_.begin()), std::make_move_iterator(items_.begin() + n));
        items_.erase(items_.begin(), items_.begin() + n);
      }
      if (!items_.empty()) deadline_ = std::chrono::steady_clock::now() + options_.max_delay;
    }
    sink_(std::move(batch), why);
  }

  void TimerLoop() {
    std::unique_lock lock(mu_);
    while (!closed_) {
      if (items_.empty()) {
        cv_.wait(lock);
        continue;
      }
      if (std::chrono::steady_clock::now() < deadline_) {
        cv_.wait_until(lock, deadline_);
        continue;
      }
      lock.unlock();
      Deliver(BatchClose::kDeadline,
              [&] { return !items_.empty() && std::chrono::steady_clock::now() >= deadline_; });
      lock.lock();
    }
  }

  const BatcherOptions options_;
  const Sink sink_;
  mutable std::mutex mu_;       // items_, deadline_, closed_
  std::mutex sink_mu_;          // one delivery at a time, taken before mu_
  std::condition_variable cv_;
  std::vector<T> items_;
  std::chrono::steady_clock::time_point deadline_;
  bool closed_ = false;
  std::thread timer_;
};

}  // namespace neardup::tier2
