#include "tier2/signature_log.h"

#include <sys/uio.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/coding.h"

namespace neardup::tier2 {
namespace {

constexpr uint32_t kLogMagic = 0x4e445331;  // "NDS1"

Status TooLarge(size_t record, uint64_t bytes) {
  return InvalidArgument("signature log: record " + std::to_string(record) + " has " + std::to_string(bytes) +
                         " bytes, over the limit of " + std::to_string(SignatureLog::kMaxPayload));
}

}  // namespace

StatusOr<std::unique_ptr<SignatureLog>> SignatureLog::Open(FileEnv* env, const std::string& path,
                                                           uint64_t committed_end, bool read_only) {
  auto file = env->OpenFile(path, read_only ? FileMode::kReadOnly : FileMode::kReadWrite);
  if (!file.ok()) return Status(file.status().code(), "signature log: " + file.status().message());
  auto size = (*file)->Size();
  if (!size.ok()) return Status(size.status().code(), "signature log: " + size.status().message());
  if (*size < committed_end) {
    return Corruption("signature log: " + path + " has " + std::to_string(*size) + " bytes, the store refers to " +
                      std::to_string(committed_end));
  }
  if (!read_only && *size > committed_end) {
    if (Status s = (*file)->Truncate(committed_end); !s.ok()) return IoError("signature log: " + s.message());
  }
  return std::unique_ptr<SignatureLog>(new SignatureLog(std::move(*file), committed_end));
}

SignatureLog::~SignatureLog() = default;

Status SignatureLog::Append(std::span<const std::string_view> payloads, std::vector<Ref>* refs) {
  std::vector<uint32_t> sizes(payloads.size());
  for (size_t i = 0; i < payloads.size(); ++i) {
    if (payloads[i].size() > kMaxPayload) return TooLarge(i, payloads[i].size());
    sizes[i] = static_cast<uint32_t>(payloads[i].size());
  }
  return AppendFilled(
      sizes, [&](size_t i, char* dst) { std::memcpy(dst, payloads[i].data(), payloads[i].size()); }, refs);
}

Status SignatureLog::Lay(std::span<const uint32_t> sizes, std::vector<Ref>* refs, char** at) {
  refs->clear();
  uint64_t total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] > kMaxPayload) return TooLarge(i, sizes[i]);
    refs->push_back(Ref{end_ + total, sizes[i]});
    total += kHeaderBytes + sizes[i];
  }
  if (total > buffer_capacity_) {
    const size_t capacity = std::max<size_t>(total, buffer_capacity_ * 2);
    buffer_ = std::make_unique_for_overwrite<char[]>(capacity);
    buffer_capacity_ = capacity;
  }
  buffer_size_ = total;
  *at = buffer_.get();
  return Status::Ok();
}

Status SignatureLog::WriteLaid(std::vector<Ref>* refs) {
  char* const base = buffer_.get();
  const uint64_t start = end_;
  for (const Ref& r : *refs) {
    char* h = base + (r.offset - start);
    StoreLittleEndian(h, r.length, 4);
    StoreLittleEndian(h + 4, kLogMagic, 4);
    StoreLittleEndian(h + 8, XXH3_64bits(h + kHeaderBytes, r.length), 8);
  }
  const size_t total = buffer_size_;
  if (Status s = file_->WriteAt(start, std::string_view(base, total)); !s.ok()) {
    s = IoError("signature log: append: " + s.message());
    if (Status cut = file_->Truncate(start); !cut.ok()) {
      s = IoError(s.message() + "; cutting it back also failed: " + cut.message());
    }
    refs->clear();
    return s;
  }
  end_ += total;
  return Status::Ok();
}

Status SignatureLog::Sync() {
  if (Status s = file_->Sync(); !s.ok()) return IoError("signature log: " + s.message());
  return Status::Ok();
}

Status SignatureLog::Truncate(uint64_t end) {
  if (end > end_) {
    return InvalidArgument("signature log: cannot cut " + path() + " to " + std::to_string(end) + " bytes, it has " +
                           std::to_string(end_));
  }
  if (Status s = file_->Truncate(end); !s.ok()) return IoError("signature log: " + s.message());
  end_ = end;
  return Status::Ok();
}

Status SignatureLog::Read(Ref ref, std::string* payload) const {
  auto corrupt = [&](const std::string& why) {
    return Corruption("signature log: " + path() + ": record at offset " + std::to_string(ref.offset) + ": " + why);
  };
  if (ref.length > kMaxPayload || ref.offset + ref.bytes() > end_) return corrupt("lies beyond the end of the log");
  // One read into two places: the header apart, the payload where the caller wants it.
  char h[kHeaderBytes];
  payload->resize(ref.length);
  const iovec parts[2] = {{h, kHeaderBytes}, {payload->data(), ref.length}};
  size_t got = 0;
  if (Status s = file_->ReadAt(ref.offset, parts, &got); !s.ok()) return IoError("signature log: " + s.message());
  if (got < ref.bytes()) return corrupt("the file ends inside it");
  if (LoadLittleEndian(h, 4) != ref.length) {
    return corrupt("its header gives " + std::to_string(LoadLittleEndian(h, 4)) + " bytes, the index " + std::to_string(ref.length));
  }
  if (LoadLittleEndian(h + 4, 4) != kLogMagic) return corrupt("bad magic");
  const uint64_t sum = LoadLittleEndian(h + 8, 8);
  if (XXH3_64bits(payload->data(), payload->size()) != sum) return corrupt("checksum mismatch");
  return Status::Ok();
}

void SignatureLog::WillNeed(std::span<const Ref> refs) const {
  if (refs.empty()) return;
  std::vector<Ref> sorted(refs.begin(), refs.end());
  std::sort(sorted.begin(), sorted.end(), [](const Ref& a, const Ref& b) { return a.offset < b.offset; });
  // Records within a page of each other share a hint (the kernel reads whole pages anyway).
  constexpr uint64_t kJoin = 4096;
  uint64_t from = sorted[0].offset, to = from + sorted[0].bytes();
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i].offset <= to + kJoin) {
      to = std::max(to, sorted[i].offset + sorted[i].bytes());
      continue;
    }
    file_->WillNeed(from, to - from);
    from = sorted[i].offset;
    to = from + sorted[i].bytes();
  }
  file_->WillNeed(from, to - from);
}

Status SignatureLog::Scan(const std::function<Status(Ref, std::string_view)>& visit) const {
  const uint64_t end = end_.load(std::memory_order_acquire);
  std::string buf;
  size_t have = 0;     // bytes in buf: the file from `base` on
  uint64_t base = 0;   // file offset of buf[0]
  uint64_t at = 0;     // the next record's offset
  auto corrupt = [&](const std::string& why) {
    return Corruption("signature log: " + path() + ": record at offset " + std::to_string(at) + ": " + why);
  };
  // Makes sure buf holds [at, at + n) (n <= end - at), reading on from the file.
  auto fill = [&](uint64_t n) -> Status {
    if (at + n <= base + have) return Status::Ok();
    // Keep the unread part, read behind it.
    const size_t keep = static_cast<size_t>(base + have - at);
    std::memmove(buf.data(), buf.data() + (at - base), keep);
    base = at;
    have = keep;
    const size_t want = static_cast<size_t>(std::min<uint64_t>(end - base, std::max<uint64_t>(n, 8u << 20)));
    if (buf.size() < want) buf.resize(want);
    if (have < want) {
      const iovec part{buf.data() + have, want - have};
      size_t got = 0;
      if (Status s = file_->ReadAt(base + have, {&part, 1}, &got); !s.ok()) {
        return IoError("signature log: " + s.message());
      }
      have += got;
      if (have < want) return corrupt("the file ends before the log's end");
    }
    return Status::Ok();
  };
  while (at < end) {
    if (end - at < kHeaderBytes) return corrupt("a header runs past the end of the log");
    RETURN_IF_ERROR(fill(kHeaderBytes));
    const char* h = buf.data() + (at - base);
    const uint64_t length = LoadLittleEndian(h, 4);
    if (LoadLittleEndian(h + 4, 4) != kLogMagic) return corrupt("bad magic");
    if (length > kMaxPayload) return corrupt("its header gives " + std::to_string(length) + " bytes, over the limit");
    if (kHeaderBytes + length > end - at) return corrupt("it runs past the end of the log");
    const uint64_t sum = LoadLittleEndian(h + 8, 8);
    RETURN_IF_ERROR(fill(kHeaderBytes + length));
    const char* payload = buf.data() + (at - base) + kHeaderBytes;
    if (XXH3_64bits(payload, length) != sum) return corrupt("checksum mismatch");
    RETURN_IF_ERROR(visit(Ref{at, static_cast<uint32_t>(length)}, std::string_view(payload, length)));
    at += kHeaderBytes + length;
  }
  return Status::Ok();
}

}  // namespace neardup::tier2
