// FaultyEnv: a LevelDB Env for tests whose writable files can be told to fail every Append, so a
// test can make a store's write fail half-way and check that nothing of it was applied, or to
// hold every Sync until released, so a test can look at a store while a write is in flight, or to
// crash: from a chosen Append on, every write and sync fails (the process died there), and
// DropUnsyncedData() then cuts every file back to what its last Sync made durable (the machine
// lost its page cache), as LevelDB's own fault_injection_test does.
//
//   std::unique_ptr<leveldb::Env> mem(leveldb::NewMemEnv(leveldb::Env::Default()));
//   FaultyEnv env(mem.get());
//   options.env = &env;
//   env.fail_appends = true;   // from now on every write fails with IOError
//   env.hold_syncs = true;     // every Sync waits (polling each millisecond) until it is false
//   env.CrashAfterAppends(100);   // the 101st Append and everything after it fail
//   ... destroy the store ...
//   env.DropUnsyncedData(&rng);   // each file keeps what it synced (and maybe a torn part more)
//   env.Recover();                // writes work again; open the store again
//
// Renames and removals are taken as durable at once (LevelDB syncs the directory where it needs
// to). Thread safety: every method may be called from any thread.
#pragma once

#include <leveldb/env.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>

namespace neardup {

class FaultyEnv : public leveldb::EnvWrapper {
 public:
  explicit FaultyEnv(leveldb::Env* base) : leveldb::EnvWrapper(base) {}
  leveldb::Status NewWritableFile(const std::string& f, leveldb::WritableFile** r) override {
    if (crashed()) return leveldb::Status::IOError(f, "injected crash");
    leveldb::Status s = target()->NewWritableFile(f, r);
    if (s.ok()) Track(f, 0);
    return Wrap(f, s, r);
  }
  leveldb::Status NewAppendableFile(const std::string& f, leveldb::WritableFile** r) override {
    if (crashed()) return leveldb::Status::IOError(f, "injected crash");
    uint64_t size = 0;
    if (!target()->GetFileSize(f, &size).ok()) size = 0;
    leveldb::Status s = target()->NewAppendableFile(f, r);
    if (s.ok()) Track(f, size);
    return Wrap(f, s, r);
  }
  leveldb::Status RemoveFile(const std::string& f) override {
    if (crashed()) return leveldb::Status::IOError(f, "injected crash");
    {
      std::lock_guard lock(mu_);
      files_.erase(f);
    }
    return target()->RemoveFile(f);
  }
  leveldb::Status RenameFile(const std::string& from, const std::string& to) override {
    if (crashed()) return leveldb::Status::IOError(from, "injected crash");
    {
      std::lock_guard lock(mu_);
      auto it = files_.find(from);
      if (it != files_.end()) {
        files_[to] = it->second;
        files_.erase(from);
      }
    }
    return target()->RenameFile(from, to);
  }

  std::atomic<bool> fail_appends{false};
  std::atomic<bool> hold_syncs{false};

  // The next n Appends go through; every later Append, Sync, new file, rename and removal fails.
  void CrashAfterAppends(int64_t n) { appends_left_ = n; }
  bool crashed() const { return appends_left_.load() <= 0; }
  // Cuts every file written through this env back to its size at its last Sync; with a generator,
  // keeps a random part of the unsynced tail (a torn write). Call with no file open for writing.
  void DropUnsyncedData(std::mt19937_64* torn = nullptr) {
    std::lock_guard lock(mu_);
    for (auto& [name, state] : files_) {
      uint64_t size = 0;
      if (!target()->GetFileSize(name, &size).ok() || size <= state.synced) continue;
      uint64_t keep = state.synced;
      if (torn != nullptr) keep += std::uniform_int_distribution<uint64_t>(0, size - state.synced)(*torn);
      std::string data;
      leveldb::Status s = leveldb::ReadFileToString(target(), name, &data);
      if (!s.ok()) continue;
      data.resize(keep);
      (void)leveldb::WriteStringToFile(target(), data, name);
    }
    for (auto& [name, state] : files_) {
      uint64_t size = 0;
      if (target()->GetFileSize(name, &size).ok()) state.synced = size;
    }
  }
  // Ends the crash: writes work again.
  void Recover() { appends_left_ = kNoCrash; }

 private:
  static constexpr int64_t kNoCrash = INT64_MAX;
  struct FileState {
    uint64_t synced = 0;  // bytes made durable by the last Sync (or there at open)
    uint64_t size = 0;    // bytes appended through this env
  };
  bool TakeAppend() { return appends_left_.load() == kNoCrash || appends_left_.fetch_sub(1) > 0; }
  void Track(const std::string& f, uint64_t size) {
    std::lock_guard lock(mu_);
    files_[f] = FileState{size, size};
  }
  void Appended(const std::string& f, uint64_t n) {
    std::lock_guard lock(mu_);
    auto it = files_.find(f);
    if (it != files_.end()) it->second.size += n;
  }
  void Synced(const std::string& f) {
    std::lock_guard lock(mu_);
    auto it = files_.find(f);
    if (it != files_.end()) it->second.synced = it->second.size;
  }

  class File : public leveldb::WritableFile {
   public:
    File(std::string name, leveldb::WritableFile* base, FaultyEnv* env)
        : name_(std::move(name)), base_(base), env_(env) {}
    leveldb::Status Append(const leveldb::Slice& data) override {
      if (env_->fail_appends.load()) return leveldb::Status::IOError("injected append failure");
      if (!env_->TakeAppend()) return leveldb::Status::IOError(name_, "injected crash");
      leveldb::Status s = base_->Append(data);
      if (s.ok()) env_->Appended(name_, data.size());
      return s;
    }
    leveldb::Status Close() override { return base_->Close(); }
    leveldb::Status Flush() override { return base_->Flush(); }
    leveldb::Status Sync() override {
      while (env_->hold_syncs.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (env_->crashed()) return leveldb::Status::IOError(name_, "injected crash");
      leveldb::Status s = base_->Sync();
      if (s.ok()) env_->Synced(name_);
      return s;
    }

   private:
    std::string name_;
    std::unique_ptr<leveldb::WritableFile> base_;
    FaultyEnv* env_;
  };
  leveldb::Status Wrap(const std::string& f, leveldb::Status s, leveldb::WritableFile** r) {
    if (s.ok()) *r = new File(f, *r, this);
    return s;
  }

  std::atomic<int64_t> appends_left_{kNoCrash};
  std::mutex mu_;
  std::map<std::string, FileState> files_;
};

}  // namespace neardup
