#include "cluster/tier1_server/ingest_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/thread_priority.h"

namespace neardup::cluster {
namespace {

std::string Errno(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

// The size of the file's whole lines: where its last newline ends (0: none).
StatusOr<uint64_t> WholeLines(int fd, uint64_t size, const std::string& path) {
  char buf[64 << 10];
  uint64_t end = size;
  while (end > 0) {
    const uint64_t n = std::min<uint64_t>(sizeof(buf), end);
    const ssize_t got = ::pread(fd, buf, n, static_cast<off_t>(end - n));
    if (got != static_cast<ssize_t>(n)) return IoError(Errno("ingest log: cannot read", path));
    for (uint64_t i = n; i > 0; --i) {
      if (buf[i - 1] == '\n') return end - n + i;
    }
    end -= n;
  }
  return uint64_t{0};
}

}  // namespace

StatusOr<std::unique_ptr<IngestLog>> IngestLog::Open(const Options& options) {
  const int fd = ::open(options.path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(Errno("ingest log: cannot open", options.path));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return IoError(Errno("ingest log: cannot stat", options.path));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  StatusOr<uint64_t> whole = WholeLines(fd, size, options.path);
  if (!whole.ok()) {
    ::close(fd);
    return whole.status();
  }
  if (*whole != size) {
    spdlog::warn("ingest log {}: cutting a torn tail of {} bytes (never acknowledged)", options.path, size - *whole);
    if (::ftruncate(fd, static_cast<off_t>(*whole)) != 0 || (options.sync && ::fdatasync(fd) != 0)) {
      const Status s = IoError(Errno("ingest log: cannot cut the torn tail of", options.path));
      ::close(fd);
      return s;
    }
  }
  // The file's entry in its directory, durable before the first acknowledgement: syncing the
  // file's data does not sync the directory that names it.
  if (options.sync) {
    std::string dir = std::filesystem::path(options.path).parent_path().string();
    if (dir.empty()) dir = ".";
    if (Status s = options.env->SyncDir(dir); !s.ok()) {
      ::close(fd);
      return IoError("ingest log " + options.path + ": " + s.message());
    }
  }
  return std::unique_ptr<IngestLog>(new IngestLog(options, fd, *whole));
}

IngestLog::IngestLog(Options options, int fd, uint64_t size) : options_(std::move(options)), fd_(fd), durable_(size) {
  writer_ = std::thread([this] {
    NameThisThread("nd-ingest-log");
    WriterLoop();
  });
}

IngestLog::~IngestLog() {
  Close();
  ::close(fd_);
}

void IngestLog::Close() {
  {
    std::lock_guard lock(mu_);
    if (closed_ && !writer_.joinable()) return;
    closed_ = true;
  }
  cv_.notify_all();
  durable_cv_.notify_all();
  if (writer_.joinable() && writer_.get_id() != std::this_thread::get_id()) writer_.join();
}

Status IngestLog::Append(std::string lines, uint64_t records, Done done) {
  if (lines.empty() || lines.back() != '\n') return InvalidArgument("ingest log: an append must end with a newline");
  {
    std::lock_guard lock(mu_);
    if (closed_) return FailedPrecondition("ingest log: closed");
    if (!failed_.ok()) return failed_;
    if (stats_.pending_bytes + lines.size() > options_.max_pending_bytes && stats_.pending_bytes > 0) {
      ++stats_.refused;
      return ResourceExhausted("ingest log: " + std::to_string(stats_.pending_bytes) + " bytes wait to be written");
    }
    stats_.pending_bytes += lines.size();
    pending_.push_back({std::move(lines), records, std::move(done)});
  }
  cv_.notify_one();
  return Status::Ok();
}

void IngestLog::WriterLoop() {
  std::vector<Pending> group;
  std::string bytes;
  for (;;) {
    uint64_t at = 0;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return !pending_.empty() || closed_; });
      if (pending_.empty()) return;  // closed, all written
      group.clear();
      while (!pending_.empty()) {
        group.push_back(std::move(pending_.front()));
        pending_.pop_front();
      }
      at = durable_;
    }
    bytes.clear();
    uint64_t records = 0;
    for (const Pending& p : group) bytes += p.lines, records += p.records;
    Status s;
    size_t off = 0;
    while (off < bytes.size()) {
      const ssize_t n = ::pwrite(fd_, bytes.data() + off, bytes.size() - off, static_cast<off_t>(at + off));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        s = IoError(Errno("ingest log: cannot write", options_.path));
        break;
      }
      off += static_cast<size_t>(n);
    }
    if (s.ok() && options_.sync && ::fdatasync(fd_) != 0) s = IoError(Errno("ingest log: cannot sync", options_.path));
    if (!s.ok()) {
      // What reached the file is unknown to have reached the disk: cut it (best effort) and
      // refuse everything from now on.
      if (::ftruncate(fd_, static_cast<off_t>(at)) != 0) spdlog::error("ingest log {}: cannot cut back a failed write", options_.path);
      spdlog::error("{}: the log refuses appends from now on", s.ToString());
    }
    const uint64_t end = at + bytes.size();
    {
      std::lock_guard lock(mu_);
      stats_.pending_bytes -= bytes.size();
      if (s.ok()) {
        durable_ = end;
        ++stats_.syncs;
        stats_.appends += group.size();
        stats_.records += records;
        stats_.bytes += bytes.size();
      } else {
        failed_ = s;
        for (Pending& p : pending_) stats_.pending_bytes -= p.lines.size(), group.push_back(std::move(p));
        pending_.clear();
      }
    }
    durable_cv_.notify_all();
    uint64_t running = at;
    for (Pending& p : group) {
      running += p.lines.size();
      p.done(s, s.ok() ? running : at);
    }
    if (!s.ok()) {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return closed_; });
      return;
    }
  }
}

Status IngestLog::failure() const {
  std::lock_guard lock(mu_);
  return failed_;
}

uint64_t IngestLog::durable_bytes() const {
  std::lock_guard lock(mu_);
  return durable_;
}

void IngestLog::WaitDurable(uint64_t have, std::chrono::steady_clock::time_point until) const {
  std::unique_lock lock(mu_);
  durable_cv_.wait_until(lock, until, [&] { return durable_ > have || closed_; });
}

IngestLog::Stats IngestLog::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace neardup::cluster
