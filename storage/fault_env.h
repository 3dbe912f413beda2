// FaultyEnv: a LevelDB Env for tests whose writable files can be told to fail every Append, so a
// test can make a store's write fail half-way and check that nothing of it was applied, or to
// hold every Sync until released, so a test can look at a store while a write is in flight.
//
//   std::unique_ptr<leveldb::Env> mem(leveldb::NewMemEnv(leveldb::Env::Default()));
//   FaultyEnv env(mem.get());
//   options.env = &env;
//   env.fail_appends = true;   // from now on every write fails with IOError
//   env.hold_syncs = true;     // every Sync waits (polling each millisecond) until it is false
//
// Thread safety: fail_appends and hold_syncs are atomic; the rest is the wrapped Env's.
#pragma once

#include <leveldb/env.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

namespace neardup {

class FaultyEnv : public leveldb::EnvWrapper {
 public:
  explicit FaultyEnv(leveldb::Env* base) : leveldb::EnvWrapper(base) {}
  leveldb::Status NewWritableFile(const std::string& f, leveldb::WritableFile** r) override {
    return Wrap(target()->NewWritableFile(f, r), r);
  }
  leveldb::Status NewAppendableFile(const std::string& f, leveldb::WritableFile** r) override {
    return Wrap(target()->NewAppendableFile(f, r), r);
  }
  std::atomic<bool> fail_appends{false};
  std::atomic<bool> hold_syncs{false};

 private:
  class File : public leveldb::WritableFile {
   public:
    File(leveldb::WritableFile* base, const FaultyEnv* env) : base_(base), env_(env) {}
    leveldb::Status Append(const leveldb::Slice& data) override {
      return env_->fail_appends.load() ? leveldb::Status::IOError("injected append failure") : base_->Append(data);
    }
    leveldb::Status Close() override { return base_->Close(); }
    leveldb::Status Flush() override { return base_->Flush(); }
    leveldb::Status Sync() override {
      while (env_->hold_syncs.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return base_->Sync();
    }

   private:
    std::unique_ptr<leveldb::WritableFile> base_;
    const FaultyEnv* env_;
  };
  leveldb::Status Wrap(leveldb::Status s, leveldb::WritableFile** r) {
    if (s.ok()) *r = new File(*r, this);
    return s;
  }
};

}  // namespace neardup
