#include "tier2/signature_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/coding.h"

namespace neardup::tier2 {
namespace {

constexpr uint32_t kMagic = 0x4e445331;  // "NDS1"

Status Errno(const std::string& what) { return IoError(what + ": " + std::strerror(errno)); }

Status TooLarge(size_t record, uint64_t bytes) {
  return InvalidArgument("signature log: record " + std::to_string(record) + " has " + std::to_string(bytes) +
                         " bytes, over the limit of " + std::to_string(SignatureLog::kMaxPayload));
}

}  // namespace

StatusOr<std::unique_ptr<SignatureLog>> SignatureLog::Open(const std::string& path, uint64_t committed_end,
                                                           bool read_only) {
  const int fd = read_only ? ::open(path.c_str(), O_RDONLY | O_CLOEXEC) : ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("signature log: open " + path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    Status s = Errno("signature log: stat " + path);
    ::close(fd);
    return s;
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size < committed_end) {
    ::close(fd);
    return Corruption("signature log: " + path + " has " + std::to_string(size) + " bytes, the store refers to " +
                      std::to_string(committed_end));
  }
  if (!read_only && size > committed_end && ::ftruncate(fd, static_cast<off_t>(committed_end)) != 0) {
    Status s = Errno("signature log: cut " + path + " to " + std::to_string(committed_end) + " bytes");
    ::close(fd);
    return s;
  }
  return std::unique_ptr<SignatureLog>(new SignatureLog(path, fd, committed_end));
}

SignatureLog::~SignatureLog() { ::close(fd_); }

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
    StoreLittleEndian(h + 4, kMagic, 4);
    StoreLittleEndian(h + 8, XXH3_64bits(h + kHeaderBytes, r.length), 8);
  }
  const size_t total = buffer_size_;
  size_t done = 0;
  while (done < total) {
    const ssize_t n = ::pwrite(fd_, base + done, total - done, static_cast<off_t>(start + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status s = Errno("signature log: append to " + path_);
      if (::ftruncate(fd_, static_cast<off_t>(start)) != 0) {
        s = IoError(s.message() + "; cutting it back also failed: " + std::strerror(errno));
      }
      refs->clear();
      return s;
    }
    done += static_cast<size_t>(n);
  }
  end_ += total;
  return Status::Ok();
}

Status SignatureLog::Sync() {
  if (::fdatasync(fd_) != 0) return Errno("signature log: sync " + path_);
  return Status::Ok();
}

Status SignatureLog::Truncate(uint64_t end) {
  if (end > end_) {
    return InvalidArgument("signature log: cannot cut " + path_ + " to " + std::to_string(end) + " bytes, it has " +
                           std::to_string(end_));
  }
  if (::ftruncate(fd_, static_cast<off_t>(end)) != 0) return Errno("signature log: cut " + path_);
  end_ = end;
  return Status::Ok();
}

Status SignatureLog::Read(Ref ref, std::string* payload) const {
  auto corrupt = [&](const std::string& why) {
    return Corruption("signature log: " + path_ + ": record at offset " + std::to_string(ref.offset) + ": " + why);
  };
  if (ref.length > kMaxPayload || ref.offset + ref.bytes() > end_) return corrupt("lies beyond the end of the log");
  // One read into two places: the header apart, the payload where the caller wants it.
  char h[kHeaderBytes];
  payload->resize(ref.length);
  size_t done = 0;
  while (done < ref.bytes()) {
    iovec parts[2];
    int count = 0;
    if (done < kHeaderBytes) parts[count++] = iovec{h + done, kHeaderBytes - done};
    const size_t in_payload = done > kHeaderBytes ? done - kHeaderBytes : 0;
    if (in_payload < ref.length) parts[count++] = iovec{payload->data() + in_payload, ref.length - in_payload};
    const ssize_t n = ::preadv(fd_, parts, count, static_cast<off_t>(ref.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("signature log: read " + path_ + " at offset " + std::to_string(ref.offset));
    if (n == 0) return corrupt("the file ends inside it");
    done += static_cast<size_t>(n);
  }
  if (LoadLittleEndian(h, 4) != ref.length) {
    return corrupt("its header gives " + std::to_string(LoadLittleEndian(h, 4)) + " bytes, the index " + std::to_string(ref.length));
  }
  if (LoadLittleEndian(h + 4, 4) != kMagic) return corrupt("bad magic");
  const uint64_t sum = LoadLittleEndian(h + 8, 8);
  if (XXH3_64bits(payload->data(), payload->size()) != sum) return corrupt("checksum mismatch");
  return Status::Ok();
}

Status SignatureLog::Scan(const std::function<Status(Ref, std::string_view)>& visit) const {
  const uint64_t end = end_.load(std::memory_order_acquire);
  std::string buf;
  size_t have = 0;     // bytes in buf: the file from `base` on
  uint64_t base = 0;   // file offset of buf[0]
  uint64_t at = 0;     // the next record's offset
  auto corrupt = [&](const std::string& why) {
    return Corruption("signature log: " + path_ + ": record at offset " + std::to_string(at) + ": " + why);
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
    while (have < want) {
      const ssize_t r = ::pread(fd_, buf.data() + have, want - have, static_cast<off_t>(base + have));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return Errno("signature log: read " + path_ + " at offset " + std::to_string(base + have));
      if (r == 0) return corrupt("the file ends before the log's end");
      have += static_cast<size_t>(r);
    }
    return Status::Ok();
  };
  while (at < end) {
    if (end - at < kHeaderBytes) return corrupt("a header runs past the end of the log");
    RETURN_IF_ERROR(fill(kHeaderBytes));
    const char* h = buf.data() + (at - base);
    const uint64_t length = LoadLittleEndian(h, 4);
    if (LoadLittleEndian(h + 4, 4) != kMagic) return corrupt("bad magic");
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
