#include "storage/file_env.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace neardup {
namespace {

Status Errno(const std::string& what, int e = errno) { return IoError(what + ": " + std::strerror(e)); }

class PosixFile final : public File {
 public:
  PosixFile(std::string path, int fd) : File(std::move(path)), fd_(fd) {}
  ~PosixFile() override { ::close(fd_); }

  Status ReadAt(uint64_t offset, std::span<const iovec> parts, size_t* read) const override {
    size_t want = 0;
    for (const iovec& p : parts) want += p.iov_len;
    *read = 0;
    // One preadv almost always fills the parts (a record read on the verification path): the
    // parts are copied, to advance past a short read, only when it does not.
    std::vector<iovec> rest;  // what is left to fill, after a short read
    const iovec* vec = parts.data();
    size_t count = parts.size();
    while (*read < want) {
      const ssize_t n = ::preadv(fd_, vec, static_cast<int>(count), static_cast<off_t>(offset + *read));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Errno("read " + path() + " at offset " + std::to_string(offset + *read));
      if (n == 0) break;  // the end of the file
      *read += static_cast<size_t>(n);
      if (*read == want) break;
      if (vec != rest.data()) rest.assign(vec, vec + count);
      // Skip what the read filled.
      size_t filled = 0;
      for (size_t got = static_cast<size_t>(n); got > 0;) {
        if (got >= rest[filled].iov_len) {
          got -= rest[filled].iov_len;
          ++filled;
        } else {
          rest[filled].iov_base = static_cast<char*>(rest[filled].iov_base) + got;
          rest[filled].iov_len -= got;
          got = 0;
        }
      }
      rest.erase(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(filled));
      vec = rest.data();
      count = rest.size();
    }
    return Status::Ok();
  }

  void WillNeed(uint64_t offset, uint64_t length) const override {
    (void)::posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(length), POSIX_FADV_WILLNEED);
  }

  Status WriteAt(uint64_t offset, std::string_view data) override {
    for (size_t done = 0; done < data.size();) {
      const ssize_t n = ::pwrite(fd_, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Errno("write " + path());
      if (n == 0) return IoError("write " + path() + ": no progress");
      done += static_cast<size_t>(n);
    }
    return Status::Ok();
  }

  Status Sync() override { return ::fdatasync(fd_) == 0 ? Status::Ok() : Errno("sync " + path()); }

  Status Truncate(uint64_t size) override {
    return ::ftruncate(fd_, static_cast<off_t>(size)) == 0
               ? Status::Ok()
               : Errno("cut " + path() + " to " + std::to_string(size) + " bytes");
  }

  StatusOr<uint64_t> Size() const override {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) return Errno("stat " + path());
    return static_cast<uint64_t>(st.st_size);
  }

 private:
  int fd_;
};

class PosixLock final : public FileLock {
 public:
  explicit PosixLock(int fd) : fd_(fd) {}
  ~PosixLock() override { ::close(fd_); }  // closing the descriptor releases the flock

 private:
  int fd_;
};

class PosixEnv final : public FileEnv {
 public:
  StatusOr<std::unique_ptr<File>> OpenFile(const std::string& path, FileMode mode) override {
    int flags = O_CLOEXEC;
    switch (mode) {
      case FileMode::kReadOnly: flags |= O_RDONLY; break;
      case FileMode::kReadWrite: flags |= O_RDWR | O_CREAT; break;
      case FileMode::kTruncate: flags |= O_RDWR | O_CREAT | O_TRUNC; break;
    }
    const int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) {
      if (errno == ENOENT && mode == FileMode::kReadOnly) return NotFound(path + " does not exist");
      return Errno("open " + path);
    }
    return std::unique_ptr<File>(new PosixFile(path, fd));
  }

  Status Rename(const std::string& from, const std::string& to) override {
    return ::rename(from.c_str(), to.c_str()) == 0 ? Status::Ok() : Errno("rename " + from + " to " + to);
  }

  Status Remove(const std::string& path) override {
    if (::unlink(path.c_str()) == 0) return Status::Ok();
    return errno == ENOENT ? NotFound(path + " does not exist") : Errno("remove " + path);
  }

  Status CreateDirs(const std::string& dir) override {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    return ec ? IoError("create " + dir + ": " + ec.message()) : Status::Ok();
  }

  Status SyncDir(const std::string& dir) override {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Errno("open directory " + dir);
    const int r = ::fsync(fd);
    const int e = errno;
    ::close(fd);
    return r == 0 ? Status::Ok() : Errno("sync directory " + dir, e);
  }

  Status ListDir(const std::string& dir, std::vector<std::string>* names) override {
    names->clear();
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) names->push_back(e.path().filename().string());
    return ec ? IoError("list " + dir + ": " + ec.message()) : Status::Ok();
  }

  bool Exists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }

  StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path, bool shared) override {
    const int fd = shared ? ::open(path.c_str(), O_RDONLY | O_CLOEXEC) : ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Errno("open " + path);
    if (::flock(fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
      const int e = errno;
      ::close(fd);
      if (e == EWOULDBLOCK) return FailedPrecondition(path + " is locked by another holder");
      return Errno("lock " + path, e);
    }
    return std::unique_ptr<FileLock>(new PosixLock(fd));
  }
};

std::string DirectoryOf(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

}  // namespace

FileEnv* FileEnv::Default() {
  static PosixEnv* env = new PosixEnv;  // never deleted: files may outlive static destruction
  return env;
}

Status WriteFileAtomically(FileEnv* env, const std::string& path, std::string_view bytes, bool sync) {
  const std::string tmp = path + ".tmp";
  Status s;
  {
    auto file = env->OpenFile(tmp, FileMode::kTruncate);
    if (!file.ok()) return file.status();
    s = (*file)->WriteAt(0, bytes);
    if (s.ok() && sync) s = (*file)->Sync();
  }
  if (s.ok()) s = env->Rename(tmp, path);
  if (!s.ok()) {
    (void)env->Remove(tmp);
    return s;
  }
  return sync ? env->SyncDir(DirectoryOf(path)) : Status::Ok();
}

Status ReadWholeFile(FileEnv* env, const std::string& path, std::string* out) {
  ASSIGN_OR_RETURN(std::unique_ptr<File> file, env->OpenFile(path, FileMode::kReadOnly));
  out->clear();
  char buf[1 << 16];
  for (uint64_t at = 0;;) {
    const iovec part{buf, sizeof buf};
    size_t n = 0;
    RETURN_IF_ERROR(file->ReadAt(at, {&part, 1}, &n));
    out->append(buf, n);
    at += n;
    if (n < sizeof buf) return Status::Ok();
  }
}

}  // namespace neardup
