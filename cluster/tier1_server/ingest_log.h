// IngestLog: the Tier 1 server's log of accepted crawl records, the pipeline's input.
//
// Records arrive as whole JSON Lines (the crawl record format, document/crawl_reader.h) and are
// appended in the order Append is called. A record is acknowledged only once it is durable: a
// writer thread takes every append waiting, writes them with one write and makes them durable with
// one fdatasync (group commit: one sync covers many requests), then calls each one's `done`.
// durable_bytes() is how far the file may be read (whole records, synced): the pipeline follows it
// (pipeline/ingest_feed.h).
//
// Open makes the log's directory entry durable (a sync of its directory) before anything can be
// acknowledged: a log created, or left by a process that crashed before its directory was synced,
// would otherwise vanish with every record in it at a power cut, however often its data was synced.
//
// A crash can leave a torn tail (bytes written, never synced or acknowledged): Open cuts the file
// back to its last whole line. A write or sync that fails fails its appends and every later one
// (after a failed fsync nothing is known of what reached the disk): the server must restart.
//
//   ASSIGN_OR_RETURN(auto log, IngestLog::Open({.path = dir + "/ingest.jsonl"}));
//   Status s = log->Append(lines, [](Status st, uint64_t end) { ... });   // st.ok(): durable up to end
//
// Thread safety: every method may be called from any thread. `done` runs on the log's writer
// thread, so it must be short (hand the result over to another executor).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "storage/file_env.h"

namespace neardup::cluster {

class IngestLog {
 public:
  struct Options {
    std::string path;
    // Appends waiting to be written may hold this many bytes; past it Append refuses at once.
    uint64_t max_pending_bytes = uint64_t{64} << 20;
    bool sync = true;  // fdatasync each group, sync the directory at Open (off: tests of the logic only)
    // The file system whose SyncDir makes the log's directory entry durable (tests inject faults).
    FileEnv* env = FileEnv::Default();
  };
  struct Stats {
    uint64_t appends = 0, records = 0, bytes = 0, syncs = 0;
    uint64_t refused = 0;        // appends refused for room
    uint64_t pending_bytes = 0;  // waiting to be written now
  };
  using Done = std::function<void(const Status& status, uint64_t end_offset)>;

  // Opens or creates the log, cutting a torn tail, and syncs its directory (with `sync`). IoError
  // when it cannot (the directory's sync included).
  static StatusOr<std::unique_ptr<IngestLog>> Open(const Options& options);
  // Writes what is pending, then closes (Close()).
  ~IngestLog();
  IngestLog(const IngestLog&) = delete;
  IngestLog& operator=(const IngestLog&) = delete;

  // Queues `lines` (`records` JSON Lines, each ending with '\n') for the next group; `done` is
  // called once with Ok and the log's size after them when they are durable, or with the error
  // when they could not be made durable. Refused at once, without calling `done`:
  // ResourceExhausted when the pending bytes would pass max_pending_bytes (ask again later),
  // FailedPrecondition after Close(), IoError after a failed write or sync, InvalidArgument for
  // text not ending with a newline.
  Status Append(std::string lines, uint64_t records, Done done);

  // Bytes of the log that are durable (whole records).
  uint64_t durable_bytes() const;
  // Waits until durable_bytes() > have, `until` passes, or the log is closed.
  void WaitDurable(uint64_t have, std::chrono::steady_clock::time_point until) const;
  // Refuses further appends, writes the pending ones, stops the writer thread. Idempotent.
  void Close();
  Stats stats() const;
  // Ok, or the write or sync error after which the log refuses every append.
  Status failure() const;
  const std::string& path() const { return options_.path; }

 private:
  IngestLog(Options options, int fd, uint64_t size);
  void WriterLoop();

  struct Pending {
    std::string lines;
    uint64_t records;
    Done done;
  };
  const Options options_;
  const int fd_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;          // pending appends, closing
  mutable std::condition_variable durable_cv_;  // durable_ moved, closed
  std::deque<Pending> pending_;  // guarded by mu_
  uint64_t durable_ = 0;         // guarded by mu_
  bool closed_ = false;          // guarded by mu_
  Status failed_;                // guarded by mu_
  Stats stats_;                  // guarded by mu_
  std::thread writer_;
};

}  // namespace neardup::cluster
