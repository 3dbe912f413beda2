// SignatureLog: an append-only file of records addressed by (offset, length), for the full page
// signatures a Tier 2 shard fetches to verify candidates.
//
// Why not LevelDB: a shard writes about 4 KB of shingle hashes per page and reads several of
// them per new page at random. In LevelDB those values are rewritten by every compaction and each
// read walks the memtable, the table index and a block; here a write is one sequential append and
// a read is one pread of exactly the record. The log is the shard's whole store: its records say
// which pages are resident (Scan replays them at open), and a separate commit record
// (tier2/commit_file.h) says how much of the log is committed:
//
//   ASSIGN_OR_RETURN(auto log, SignatureLog::Open(env, dir + "/sigs-1.log", committed_end));
//   std::vector<SignatureLog::Ref> refs;
//   RETURN_IF_ERROR(log->Append(payloads, &refs));   // not yet durable
//   RETURN_IF_ERROR(log->Sync());                     // when the caller wants durability
//   ... commit log->end() elsewhere; on failure: log->Truncate(committed_end) ...
//   std::string payload;  RETURN_IF_ERROR(log->Read(refs[0], &payload));
//
// Record layout: u32 payload length (LE), u32 magic, u64 XXH3-64 of the payload, payload. Read()
// checks all three, so a torn or overwritten record is reported as Corruption, never returned.
//
// Thread safety: Read() may run concurrently with Read() and with Append() and Sync() (records
// below the end are never rewritten; the end is atomic); Append, Sync and Truncate must not run
// concurrently with each other, nor Truncate with a Read of what it cuts (the shard orders them).
// The log owns its file; its I/O goes through the FileEnv it was opened with (storage/file_env.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "storage/file_env.h"

namespace neardup::tier2 {

class SignatureLog {
 public:
  static constexpr uint32_t kHeaderBytes = 16;
  // Largest payload a record may hold (a signature of ~8M shingles).
  static constexpr uint32_t kMaxPayload = 64u << 20;

  // Where a record is: `offset` of its header, `length` of its payload.
  struct Ref {
    uint64_t offset = 0;
    uint32_t length = 0;
    uint64_t bytes() const { return kHeaderBytes + static_cast<uint64_t>(length); }
  };

  // Opens (or creates) the file at `path` and cuts it to `committed_end` bytes: whatever lies
  // beyond was appended by a write that never committed. Errors: IoError when the file cannot be
  // opened or cut; Corruption when it is shorter than committed_end (committed records are gone;
  // the message gives both sizes). With read_only, the file must exist, is opened for reading and
  // left as it is (what lies past committed_end is ignored, not cut); Append fails then.
  static StatusOr<std::unique_ptr<SignatureLog>> Open(FileEnv* env, const std::string& path,
                                                      uint64_t committed_end, bool read_only = false);
  ~SignatureLog();
  SignatureLog(const SignatureLog&) = delete;
  SignatureLog& operator=(const SignatureLog&) = delete;

  // Appends one record per payload, in order, with one write; refs[i] locates payloads[i] (*refs is
  // overwritten). Errors: InvalidArgument for a payload over kMaxPayload (nothing written); IoError
  // when the write fails (the file is cut back to where it was).
  Status Append(std::span<const std::string_view> payloads, std::vector<Ref>* refs);
  // Append for callers that can write each payload in place (a serializer): record i gets
  // sizes[i] bytes, which fill(i, dst) must all write at dst. Saves building the payloads first
  // and copying them. Same errors and *refs as Append; for a payload over kMaxPayload nothing is
  // written and fill is not called.
  template <typename Fill>
  Status AppendFilled(std::span<const uint32_t> sizes, Fill&& fill, std::vector<Ref>* refs) {
    char* at = nullptr;
    if (Status s = Lay(sizes, refs, &at); !s.ok()) return s;
    for (size_t i = 0; i < sizes.size(); ++i) {
      fill(i, at + kHeaderBytes);
      at += kHeaderBytes + sizes[i];
    }
    return WriteLaid(refs);
  }
  // Makes everything appended so far durable (fdatasync). IoError when it fails.
  Status Sync();
  // Cuts the file back to `end` (<= end()), dropping appended records that were not committed.
  Status Truncate(uint64_t end);
  // Reads the payload of the record at `ref` into *payload. Corruption when the header or the
  // checksum does not match (the message gives the offset); IoError when the read fails.
  Status Read(Ref ref, std::string* payload) const;
  // Hints that the records at `refs` will be Read soon (File::WillNeed): the reads of those not
  // in the page cache then go to the disk together instead of one after the other. Records close
  // together are hinted as one range. Never fails; refs need not be sorted.
  void WillNeed(std::span<const Ref> refs) const;
  // Calls visit(ref, payload) for every record below end(), in order, reading the file
  // sequentially a few MB at a time; the payload is valid during the call only. Returns the first
  // error visit returns (and stops there); Corruption as Read gives it for a damaged record (its
  // offset) or for a last record running past end(); IoError when a read fails.
  Status Scan(const std::function<Status(Ref, std::string_view)>& visit) const;

  uint64_t end() const { return end_.load(std::memory_order_acquire); }
  const std::string& path() const { return file_->path(); }

 private:
  SignatureLog(std::unique_ptr<File> file, uint64_t end) : file_(std::move(file)), end_(end) {}
  std::unique_ptr<File> file_;
  std::atomic<uint64_t> end_;  // a reader checks a record lies below it; Append raises it after the write
  // AppendFilled's halves: Lay checks the sizes, sets *refs and sizes the buffer (*at: the first
  // record); WriteLaid fills in the headers over the payloads written and writes the buffer.
  Status Lay(std::span<const uint32_t> sizes, std::vector<Ref>* refs, char** at);
  Status WriteLaid(std::vector<Ref>* refs);
  // Append's staging buffer, kept with its capacity; never zero-filled (every byte laid out is
  // written before the buffer is).
  std::unique_ptr<char[]> buffer_;
  size_t buffer_capacity_ = 0, buffer_size_ = 0;
};

}  // namespace neardup::tier2
