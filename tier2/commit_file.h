// CommitFile: the small file that says how much of a shard's signature log is committed.
//
// A shard's pages live in its signature log (tier2/signature_log.h); an Apply appends records and
// then commits them by writing one record here: which log generation is in use, the log's
// committed end, and the sequence number of the last batch that carried one. Open() of the shard
// cuts the log back to that end, so records appended by a batch that never committed are gone.
//
// The file holds two fixed slots; commit n goes to slot n % 2 with its number and a checksum, so
// a write torn by a crash damages only the slot being written and the other still holds commit
// n - 1 (the last one acknowledged). Open reads both and takes the valid one with the higher
// number.
//
//   ASSIGN_OR_RETURN(auto commits, CommitFile::Create(env, dir + "/commit", {1, 0, 0}, /*sync=*/true));
//   ...append to the log, sync it...
//   RETURN_IF_ERROR(commits->Write({generation, log_end, sequence}, /*sync=*/true));
//   // later: ASSIGN_OR_RETURN(commits, CommitFile::Open(env, dir + "/commit"));  commits->last()
//
// Thread safety: none; the shard calls it from its one writer. The object owns its file; its I/O goes through the FileEnv it was opened with.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "storage/file_env.h"

namespace neardup::tier2 {

class CommitFile {
 public:
  struct Record {
    uint32_t generation = 1;  // the log file in use: sigs-<generation>.log
    uint64_t end = 0;         // its committed end (bytes)
    uint64_t sequence = 0;    // of the last Apply that carried one; 0 = none yet
  };

  // Creates the file at `path` holding `first` as commit 0, atomically: written to a temporary
  // file, synced and renamed over `path` (the directory synced too when `sync`). IoError when a
  // step fails.
  static StatusOr<std::unique_ptr<CommitFile>> Create(FileEnv* env, const std::string& path, const Record& first,
                                                      bool sync);
  // Opens an existing file and reads its latest valid commit. Errors: NotFound when it does not
  // exist; Corruption when neither slot holds a valid commit (the message names the file);
  // IoError when it cannot be read.
  static StatusOr<std::unique_ptr<CommitFile>> Open(FileEnv* env, const std::string& path);
  ~CommitFile();
  CommitFile(const CommitFile&) = delete;
  CommitFile& operator=(const CommitFile&) = delete;

  // Writes `r` as the next commit (fdatasync'ed when `sync`). On IoError last() is unchanged; the
  // slot written may be damaged, which Open tolerates (it falls back to the other).
  Status Write(const Record& r, bool sync);

  const Record& last() const { return last_; }
  uint64_t number() const { return number_; }  // of last(); commits are numbered from 0

  static constexpr uint32_t kSlotBytes = 64;

 private:
  CommitFile(std::unique_ptr<File> file, const Record& last, uint64_t number)
      : file_(std::move(file)), last_(last), number_(number) {}
  std::unique_ptr<File> file_;
  Record last_;
  uint64_t number_;
};

}  // namespace neardup::tier2
