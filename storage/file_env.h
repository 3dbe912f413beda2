// FileEnv: the file system as Tier 2's shards see it (its signature log, commit file, meta and
// token order), injectable like LevelDB's Env, so that tests can make a write short, a sync fail,
// the disk fill up or a crash lose what was not synced (storage/fault_file_env.h), in-process.
//
//   FileEnv* env = FileEnv::Default();              // POSIX: pread/pwrite/fdatasync/rename/flock
//   ASSIGN_OR_RETURN(std::unique_ptr<File> f, env->OpenFile(path, FileMode::kReadWrite));
//   RETURN_IF_ERROR(f->WriteAt(0, bytes));
//   RETURN_IF_ERROR(f->Sync());
//
// Every error is an IoError (NotFound where said) whose message names the operation, the path and
// the system's reason ("write /d/sigs-1.log: No space left on device").
//
// Thread safety: FileEnv methods may be called from any thread. A File's ReadAt may run
// concurrently with any of its methods; WriteAt, Sync and Truncate calls are ordered by the caller.
// A File owns its descriptor; a FileLock holds its lock until destroyed.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace neardup {

class File {
 public:
  virtual ~File() = default;
  // Reads into `parts`, in order, from `offset` on (one preadv, repeated until the parts are full
  // or the file ends); *read gets the bytes read, fewer than the parts hold only at the file's end.
  virtual Status ReadAt(uint64_t offset, std::span<const iovec> parts, size_t* read) const = 0;
  // Writes all of `data` at `offset`. On IoError part of it may have been written (a short write).
  virtual Status WriteAt(uint64_t offset, std::string_view data) = 0;
  // Makes the file's data durable (fdatasync).
  virtual Status Sync() = 0;
  // Sets the file's size to `size` bytes.
  virtual Status Truncate(uint64_t size) = 0;
  virtual StatusOr<uint64_t> Size() const = 0;
  // A hint: `length` bytes from `offset` will be read soon (posix_fadvise WILLNEED: the kernel
  // starts reading what the page cache lacks and returns). Never fails; the default ignores it.
  virtual void WillNeed(uint64_t /*offset*/, uint64_t /*length*/) const {}
  const std::string& path() const { return path_; }

 protected:
  explicit File(std::string path) : path_(std::move(path)) {}

 private:
  std::string path_;
};

// A lock on a file (flock), held until the object is destroyed.
class FileLock {
 public:
  virtual ~FileLock() = default;
};

enum class FileMode {
  kReadOnly,   // must exist
  kReadWrite,  // created when missing
  kTruncate,   // created when missing, emptied when not (read-write)
};

class FileEnv {
 public:
  virtual ~FileEnv() = default;
  // The process's POSIX file system (shared; never deleted).
  static FileEnv* Default();

  // Errors: NotFound when a kReadOnly file does not exist.
  virtual StatusOr<std::unique_ptr<File>> OpenFile(const std::string& path, FileMode mode) = 0;
  // Atomically replaces `to` with `from` (rename).
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  // NotFound when the file does not exist.
  virtual Status Remove(const std::string& path) = 0;
  // Creates the directory and its missing parents; Ok when it exists.
  virtual Status CreateDirs(const std::string& dir) = 0;
  // Makes the directory's entries (a rename, a new file) durable (fsync of the directory).
  virtual Status SyncDir(const std::string& dir) = 0;
  // The names (not paths) of the directory's entries.
  virtual Status ListDir(const std::string& dir, std::vector<std::string>* names) = 0;
  virtual bool Exists(const std::string& path) = 0;
  // Locks the file at `path` for this process: exclusive (the file is created when missing) or
  // shared (it must exist). FailedPrecondition, naming the path, when another holder has it
  // (exclusive against any, shared against an exclusive one); IoError when it cannot be opened.
  virtual StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path, bool shared) = 0;
};

// Writes `bytes` to `path` atomically: to path + ".tmp", synced, renamed over `path`, and the
// directory synced, so a reader (or a restart) sees the old content or the new, never a mix.
// Without `sync` nothing is synced (the rename still makes the switch atomic for readers).
// IoError naming the step; the temporary file is removed then.
Status WriteFileAtomically(FileEnv* env, const std::string& path, std::string_view bytes, bool sync);

// Reads the whole file at `path` into *out. NotFound when it does not exist; IoError otherwise.
Status ReadWholeFile(FileEnv* env, const std::string& path, std::string* out);

}  // namespace neardup
