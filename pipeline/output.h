// What a run writes besides the store: status lines (--status-out: one JSON line per page of a
// batch, written after the batch's commit, cut back and written again after a crash) and --out
// (every page of the store with its group, winner and status). The lines are in the
// formats users read; this is their one writer.
//
// Ownership: StatusFile owns its FILE. Thread safety: none (the tiers' thread writes the status
// file; --out is written once the batches are done).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "tier1/tier1.h"

namespace neardup::pipeline::internal {

// A page's status line (appended to *out, with its newline): its answer, Tier 1's classification
// (the "route" key), its batch, its input line and the store's map version.
void AppendStatusLine(std::string* out, std::string_view url, const tier1::StatusAnswer& a, tier1::Classification c,
                      uint64_t batch, uint64_t line, uint64_t map_version);

// A page's --out line (appended to *out, with its newline).
void AppendGroupLine(std::string* out, std::string_view url, const tier1::StatusAnswer& a);

// The length of the file's longest prefix of whole lines none of which belongs to batch `from` or
// a later one (a line without a batch number ends the search); a torn last line (no newline yet)
// is never kept. Reads backwards in pieces. IoError when it cannot read.
StatusOr<uint64_t> KeepBeforeBatch(std::FILE* f, uint64_t size, uint64_t from);

// --status-out.
class StatusFile {
 public:
  // Opens `path`: anew for a new input; for a resumed one (`resuming`), appending after cutting a
  // torn last line and the lines of batch `redo_batch` and later (the redo writes them again,
  // whole). IoError when it cannot be read, cut or written.
  static StatusOr<std::unique_ptr<StatusFile>> Open(const std::string& path, bool resuming, uint64_t redo_batch);
  ~StatusFile();
  StatusFile(const StatusFile&) = delete;
  StatusFile& operator=(const StatusFile&) = delete;
  // Writes and flushes `lines`. IoError.
  Status Append(std::string_view lines);
  // fflush + fdatasync: the lines written so far are durable. IoError.
  Status Sync();

 private:
  StatusFile(std::string path, std::FILE* f) : path_(std::move(path)), f_(f) {}
  std::string path_;
  std::FILE* f_;
};

// Writes --out to `path`: a line for each of `urls`, answered by `query` (read-only queries: the
// store is not changed). IoError when the file cannot be written; query's errors.
Status WriteGroupsFile(const std::string& path, const std::vector<std::string>& urls,
                       const std::function<Status(const std::string& url, tier1::StatusAnswer* a)>& query);

}  // namespace neardup::pipeline::internal
