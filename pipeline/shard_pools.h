// The threads a run makes once and keeps (common/worker_pool.h: starting about eleven threads a
// batch cost more than a small batch's work): one pool of one thread per shard for each fan-out
// over the shards (compare, stage, store), run with ForEachShard, and BackgroundJob, a thread that
// runs one job at a time (the stager and the writer of pipeline/shard_writes.h).
//
// Thread safety: ShardPools' pools are each used by one thread at a time (WorkerPool serialises
// concurrent Runs). BackgroundJob's Start and Wait are called from one thread.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/status.h"
#include "common/thread_priority.h"
#include "common/worker_pool.h"
#include "pipeline/run_timing.h"

namespace neardup::pipeline::internal {

// Runs fn(s) for every shard, each on a thread of `pool` (one per shard), and returns the first
// error (by shard); adds each call's wall time to (*seconds)[s] when seconds is given (it must
// hold pool.threads() entries).
template <typename Fn>
Status ForEachShard(WorkerPool& pool, Fn&& fn, std::vector<double>* seconds = nullptr) {
  std::vector<Status> st(static_cast<size_t>(pool.threads()));
  pool.Run([&](int w) {
    const size_t s = static_cast<size_t>(w);
    const auto t0 = SteadyClock::now();
    st[s] = fn(s);
    if (seconds != nullptr) (*seconds)[s] += Since(t0);
  });
  for (Status& s : st) RETURN_IF_ERROR(s);
  return Status::Ok();
}

// The three fan-outs over `shards` shards, each a pool named "nd-shard", "nd-stage", "nd-store"
// (threads -1 .. -(shards-1); the caller's thread is shard 0's), so that the tiers' thread
// compares while the stager stages and the writer stores.
struct ShardPools {
  explicit ShardPools(int shards)
      : compare(shards, "nd-shard"), stage(shards, "nd-stage"), store(shards, "nd-store") {}
  WorkerPool compare, stage, store;
};

// A thread named `name` that runs one Status-returning job at a time in the background: Start
// hands it a job, Wait waits for it and returns its status. The thread stays for the next job.
// Start must not be called while a job is running. The destructor waits for a running job.
class BackgroundJob {
 public:
  explicit BackgroundJob(const char* name)
      : thread_([this, name] {
          NameThisThread(name);
          Loop();
        }) {}
  BackgroundJob(const BackgroundJob&) = delete;
  BackgroundJob& operator=(const BackgroundJob&) = delete;
  ~BackgroundJob() {
    (void)Wait();
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Start(std::function<Status()> job) {
    std::lock_guard lock(mu_);
    job_ = std::move(job);
    running_ = true;
    started_ = true;
    cv_.notify_all();
  }
  // A job was started and not yet waited for (it may have finished).
  bool started() const { return started_; }
  // The job's status (Ok when none was started); what the job held is gone when it returns.
  Status Wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !running_; });
    started_ = false;
    Status s = std::move(status_);
    status_ = Status::Ok();
    return s;
  }

 private:
  void Loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || job_ != nullptr; });
      if (job_ == nullptr) return;  // stopping
      std::function<Status()> job = std::move(job_);
      job_ = nullptr;
      lock.unlock();
      Status s = job();
      job = nullptr;  // what the job holds goes before Wait returns
      lock.lock();
      status_ = std::move(s);
      running_ = false;
      cv_.notify_all();
    }
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::function<Status()> job_;
  bool running_ = false, stop_ = false;
  bool started_ = false;  // only Start and Wait use it (one thread)
  Status status_;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace neardup::pipeline::internal
