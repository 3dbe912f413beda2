#include "storage/fault_file_env.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace neardup {

class FaultFileEnv::FaultFile final : public File {
 public:
  FaultFile(FaultFileEnv* env, std::unique_ptr<File> base) : File(base->path()), env_(env), base_(std::move(base)) {}

  void WillNeed(uint64_t offset, uint64_t length) const override { base_->WillNeed(offset, length); }
  Status ReadAt(uint64_t offset, std::span<const iovec> parts, size_t* read) const override {
    return base_->ReadAt(offset, parts, read);
  }
  Status WriteAt(uint64_t offset, std::string_view data) override {
    size_t allowed = 0;
    Status refused = env_->BeforeWrite(path(), base_.get(), offset, data.size(), &allowed);
    if (allowed > 0) RETURN_IF_ERROR(base_->WriteAt(offset, data.substr(0, allowed)));
    return refused;
  }
  Status Sync() override {
    if (env_->SyncFails()) return IoError("sync " + path() + ": " + std::strerror(EIO));
    RETURN_IF_ERROR(base_->Sync());
    env_->Synced(path());
    return Status::Ok();
  }
  Status Truncate(uint64_t size) override {
    {
      std::lock_guard lock(env_->mu_);
      ASSIGN_OR_RETURN(uint64_t have, base_->Size());
      Undo u{std::min(size, have), {}, have, 0};
      if (size < have) {
        u.before.resize(have - size);
        const iovec part{u.before.data(), u.before.size()};
        size_t got = 0;
        RETURN_IF_ERROR(base_->ReadAt(size, {&part, 1}, &got));
        u.before.resize(got);
      }
      env_->unsynced_[path()].undo.push_back(std::move(u));
    }
    return base_->Truncate(size);
  }
  StatusOr<uint64_t> Size() const override { return base_->Size(); }

 private:
  FaultFileEnv* const env_;
  std::unique_ptr<File> base_;
};

void FaultFileEnv::FailWritesAfter(int64_t bytes) {
  std::lock_guard lock(mu_);
  write_budget_ = bytes;
}

void FaultFileEnv::FailSyncs(bool on) {
  std::lock_guard lock(mu_);
  fail_syncs_ = on;
}

void FaultFileEnv::FailRenames(bool on) {
  std::lock_guard lock(mu_);
  fail_renames_ = on;
}

uint64_t FaultFileEnv::writes() const {
  std::lock_guard lock(mu_);
  return writes_;
}
uint64_t FaultFileEnv::bytes_written() const {
  std::lock_guard lock(mu_);
  return bytes_written_;
}
uint64_t FaultFileEnv::failed_writes() const {
  std::lock_guard lock(mu_);
  return failed_writes_;
}
uint64_t FaultFileEnv::failed_syncs() const {
  std::lock_guard lock(mu_);
  return failed_syncs_;
}

Status FaultFileEnv::BeforeWrite(const std::string& path, File* base, uint64_t offset, size_t n, size_t* allowed) {
  std::lock_guard lock(mu_);
  *allowed = n;
  Status refused;
  if (write_budget_ >= 0 && static_cast<uint64_t>(write_budget_) < n) {
    *allowed = static_cast<size_t>(write_budget_);
    refused = IoError("write " + path + ": " + std::strerror(ENOSPC));
    ++failed_writes_;
  }
  if (write_budget_ >= 0) write_budget_ -= static_cast<int64_t>(*allowed);
  if (*allowed == 0) return refused;
  ++writes_;
  bytes_written_ += *allowed;
  // Keep what the write overwrites, to undo it at a crash.
  ASSIGN_OR_RETURN(uint64_t have, base->Size());
  Undo u{offset, {}, have, *allowed};
  if (offset < have) {
    u.before.resize(static_cast<size_t>(std::min<uint64_t>(have - offset, *allowed)));
    const iovec part{u.before.data(), u.before.size()};
    size_t got = 0;
    RETURN_IF_ERROR(base->ReadAt(offset, {&part, 1}, &got));
    u.before.resize(got);
  }
  unsynced_[path].undo.push_back(std::move(u));
  return refused;
}

bool FaultFileEnv::SyncFails() {
  std::lock_guard lock(mu_);
  if (fail_syncs_) ++failed_syncs_;
  return fail_syncs_;
}

void FaultFileEnv::Synced(const std::string& path) {
  std::lock_guard lock(mu_);
  unsynced_.erase(path);
}

StatusOr<std::unique_ptr<File>> FaultFileEnv::OpenFile(const std::string& path, FileMode mode) {
  if (mode == FileMode::kTruncate && base_->Exists(path)) {
    // Emptying is a write like any other: undoable until synced.
    ASSIGN_OR_RETURN(std::unique_ptr<File> f, OpenFile(path, FileMode::kReadWrite));
    RETURN_IF_ERROR(f->Truncate(0));
    return f;
  }
  ASSIGN_OR_RETURN(std::unique_ptr<File> base, base_->OpenFile(path, mode));
  return std::unique_ptr<File>(new FaultFile(this, std::move(base)));
}

Status FaultFileEnv::Rename(const std::string& from, const std::string& to) {
  {
    std::lock_guard lock(mu_);
    if (fail_renames_) return IoError("rename " + from + " to " + to + ": " + std::strerror(EIO));
  }
  RETURN_IF_ERROR(base_->Rename(from, to));
  std::lock_guard lock(mu_);
  unsynced_.erase(to);
  if (auto it = unsynced_.find(from); it != unsynced_.end()) {
    unsynced_[to] = std::move(it->second);
    unsynced_.erase(from);
  }
  return Status::Ok();
}

Status FaultFileEnv::Remove(const std::string& path) {
  RETURN_IF_ERROR(base_->Remove(path));
  std::lock_guard lock(mu_);
  unsynced_.erase(path);
  return Status::Ok();
}

Status FaultFileEnv::SyncDir(const std::string& dir) {
  if (SyncFails()) return IoError("sync directory " + dir + ": " + std::strerror(EIO));
  return base_->SyncDir(dir);
}

void FaultFileEnv::Crash(bool torn) {
  std::lock_guard lock(mu_);
  for (auto& [path, u] : unsynced_) {
    if (!base_->Exists(path) || u.undo.empty()) continue;
    auto file = base_->OpenFile(path, FileMode::kReadWrite);
    if (!file.ok()) continue;
    File& f = **file;
    // The torn write: the first half of the last write that wrote anything stays.
    std::string kept;
    uint64_t kept_at = 0;
    if (torn) {
      for (auto it = u.undo.rbegin(); it != u.undo.rend(); ++it) {
        if (it->written == 0) continue;
        kept.resize(it->written / 2);
        kept_at = it->offset;
        const iovec part{kept.data(), kept.size()};
        size_t got = 0;
        if (!f.ReadAt(kept_at, {&part, 1}, &got).ok()) got = 0;
        kept.resize(got);
        break;
      }
    }
    for (auto it = u.undo.rbegin(); it != u.undo.rend(); ++it) {
      (void)f.Truncate(it->size_before);
      if (!it->before.empty()) (void)f.WriteAt(it->offset, it->before);
    }
    if (!kept.empty()) (void)f.WriteAt(kept_at, kept);
  }
  unsynced_.clear();
  write_budget_ = -1;
  fail_syncs_ = false;
  fail_renames_ = false;
}

}  // namespace neardup
