// FaultFileEnv: a FileEnv for tests that wraps another (usually FileEnv::Default()) and fails its
// writes and syncs on command, and that can forget what was never synced, as a crash would.
//
//   FaultFileEnv env(FileEnv::Default());
//   options.env = &env;
//   env.FailWritesAfter(100);    // the disk fills up 100 bytes from now: a short write, then ENOSPC
//   env.FailSyncs(true);         // every Sync / SyncDir fails with EIO (nothing becomes durable)
//   env.Crash(/*torn=*/true);    // every file loses what was written since its last good Sync; the
//                                // last such write of each file keeps its first half (a torn tail)
//
// Crash() undoes writes and truncations (renames and removals are taken as durable at once, which
// the code under test must not rely on more than a directory sync allows). It is meant to run
// when the files' users have been closed (destroyed), as after a real crash.
//
// Thread safety: all methods may be called from any thread (one mutex).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "storage/file_env.h"

namespace neardup {

class FaultFileEnv final : public FileEnv {
 public:
  explicit FaultFileEnv(FileEnv* base) : base_(base) {}

  // From now on `bytes` more bytes are written, then every write fails with "No space left on
  // device" (the write that crosses the limit writes its first part: a short write). < 0: no limit.
  void FailWritesAfter(int64_t bytes);
  // Every Sync and SyncDir fails with "Input/output error" while on.
  void FailSyncs(bool on);
  // Every Rename fails while on.
  void FailRenames(bool on);
  // Forgets, in every file written through this env, what was written or cut since its last
  // successful Sync (see above). Clears the write limit and the failures.
  void Crash(bool torn);

  uint64_t writes() const;       // WriteAt calls that wrote anything
  uint64_t bytes_written() const;
  uint64_t failed_writes() const;
  uint64_t failed_syncs() const;

  StatusOr<std::unique_ptr<File>> OpenFile(const std::string& path, FileMode mode) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status Remove(const std::string& path) override;
  Status CreateDirs(const std::string& dir) override { return base_->CreateDirs(dir); }
  Status SyncDir(const std::string& dir) override;
  Status ListDir(const std::string& dir, std::vector<std::string>* names) override {
    return base_->ListDir(dir, names);
  }
  bool Exists(const std::string& path) override { return base_->Exists(path); }
  StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path, bool shared) override {
    return base_->LockFile(path, shared);
  }

 private:
  class FaultFile;
  // What a file looked like at its last successful Sync, as the writes since can be undone: each
  // write's offset, the bytes it overwrote (those below the size then) and the size before it.
  struct Undo {
    uint64_t offset;
    std::string before;
    uint64_t size_before;
    uint64_t written;  // bytes the write wrote
  };
  struct Unsynced {
    std::vector<Undo> undo;
  };
  // Called by FaultFile.
  Status BeforeWrite(const std::string& path, File* base, uint64_t offset, size_t n, size_t* allowed);
  void Synced(const std::string& path);
  bool SyncFails();

  FileEnv* const base_;
  mutable std::mutex mu_;
  int64_t write_budget_ = -1;
  bool fail_syncs_ = false;
  bool fail_renames_ = false;
  uint64_t writes_ = 0, bytes_written_ = 0, failed_writes_ = 0, failed_syncs_ = 0;
  std::map<std::string, Unsynced> unsynced_;  // by path
};

}  // namespace neardup
