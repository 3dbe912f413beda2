#include "tier2/commit_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/coding.h"

namespace neardup::tier2 {
namespace {

constexpr uint32_t kMagic = 0x4e444331;  // "NDC1"
// A slot: magic u32, generation u32, number u64, end u64, sequence u64, XXH3-64 of those 32 bytes
// (all little-endian), zero padding to kSlotBytes.
constexpr size_t kPayloadBytes = 32;

Status Errno(const std::string& what) { return IoError(what + ": " + std::strerror(errno)); }

void EncodeSlot(const CommitFile::Record& r, uint64_t number, char* slot) {
  std::memset(slot, 0, CommitFile::kSlotBytes);
  StoreLittleEndian(slot, kMagic, 4);
  StoreLittleEndian(slot + 4, r.generation, 4);
  StoreLittleEndian(slot + 8, number, 8);
  StoreLittleEndian(slot + 16, r.end, 8);
  StoreLittleEndian(slot + 24, r.sequence, 8);
  StoreLittleEndian(slot + kPayloadBytes, XXH3_64bits(slot, kPayloadBytes), 8);
}

bool DecodeSlot(const char* slot, CommitFile::Record* r, uint64_t* number) {
  if (LoadLittleEndian(slot, 4) != kMagic) return false;
  if (LoadLittleEndian(slot + kPayloadBytes, 8) != XXH3_64bits(slot, kPayloadBytes)) return false;
  r->generation = static_cast<uint32_t>(LoadLittleEndian(slot + 4, 4));
  *number = LoadLittleEndian(slot + 8, 8);
  r->end = LoadLittleEndian(slot + 16, 8);
  r->sequence = LoadLittleEndian(slot + 24, 8);
  return true;
}

Status WriteAll(int fd, const char* data, size_t n, off_t at, const std::string& what) {
  for (size_t done = 0; done < n;) {
    const ssize_t w = ::pwrite(fd, data + done, n - done, at + static_cast<off_t>(done));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return Errno(what);
    done += static_cast<size_t>(w);
  }
  return Status::Ok();
}

Status SyncDirectoryOf(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("open directory " + dir);
  const int r = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  if (r != 0) {
    errno = e;
    return Errno("sync directory " + dir);
  }
  return Status::Ok();
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view bytes, bool sync) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("create " + tmp);
  Status s = WriteAll(fd, bytes.data(), bytes.size(), 0, "write " + tmp);
  if (s.ok() && sync && ::fdatasync(fd) != 0) s = Errno("sync " + tmp);
  ::close(fd);
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) s = Errno("rename " + tmp + " to " + path);
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  return sync ? SyncDirectoryOf(path) : Status::Ok();
}

Status ReadWholeFile(const std::string& path, std::string* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? NotFound(path + " does not exist") : Errno("open " + path);
  out->clear();
  char buf[1 << 16];
  Status s;
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      s = Errno("read " + path);
      break;
    }
    if (n == 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return s;
}

StatusOr<std::unique_ptr<CommitFile>> CommitFile::Create(const std::string& path, const Record& first, bool sync) {
  char slots[2 * kSlotBytes];
  EncodeSlot(first, 0, slots);
  std::memset(slots + kSlotBytes, 0, kSlotBytes);
  RETURN_IF_ERROR(WriteFileAtomically(path, std::string_view(slots, sizeof slots), sync));
  return Open(path);
}

StatusOr<std::unique_ptr<CommitFile>> CommitFile::Open(const std::string& path) {
  std::string bytes;
  RETURN_IF_ERROR(ReadWholeFile(path, &bytes));
  const char* slots = bytes.data();
  const size_t got = bytes.size();
  Record best;
  uint64_t best_number = 0;
  bool found = false;
  for (int i = 0; i < 2; ++i) {
    Record r;
    uint64_t number;
    // A slot must be whole and sit where its number says (a stray copy elsewhere is not trusted).
    if ((i + 1) * kSlotBytes > got || !DecodeSlot(slots + i * kSlotBytes, &r, &number) || number % 2 != uint64_t(i)) {
      continue;
    }
    if (!found || number > best_number) {
      best = r;
      best_number = number;
      found = true;
    }
  }
  if (!found) return Corruption("commit file " + path + ": neither of its two slots holds a valid commit");
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return Errno("open " + path);
  return std::unique_ptr<CommitFile>(new CommitFile(path, fd, best, best_number));
}

CommitFile::~CommitFile() { ::close(fd_); }

Status CommitFile::Write(const Record& r, bool sync) {
  const uint64_t number = number_ + 1;
  char slot[kSlotBytes];
  EncodeSlot(r, number, slot);
  RETURN_IF_ERROR(WriteAll(fd_, slot, kSlotBytes, static_cast<off_t>((number % 2) * kSlotBytes), "write " + path_));
  if (sync && ::fdatasync(fd_) != 0) return Errno("sync " + path_);
  last_ = r;
  number_ = number;
  return Status::Ok();
}

}  // namespace neardup::tier2
