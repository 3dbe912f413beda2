// FaultyEnv: a LevelDB Env for tests whose writable files can be told to fail every Append, so a
// test can make a store's write fail half-way and check that nothing of it was applied.
//
//   std::unique_ptr<leveldb::Env> mem(leveldb::NewMemEnv(leveldb::Env::Default()));
//   FaultyEnv env(mem.get());
//   options.env = &env;
//   env.fail_appends = true;   // from now on every write fails with IOError
//
// Thread safety: fail_appends is atomic; the rest is the wrapped Env's.
#pragma once

#include <leveldb/env.h>

#include <atomic>
#include <memory>
#include <string>

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

 private:
  class File : public leveldb::WritableFile {
   public:
    File(leveldb::WritableFile* base, const std::atomic<bool>* fail) : base_(base), fail_(fail) {}
    leveldb::Status Append(const leveldb::Slice& data) override {
      return fail_->load() ? leveldb::Status::IOError("injected append failure") : base_->Append(data);
    }
    leveldb::Status Close() override { return base_->Close(); }
    leveldb::Status Flush() override { return base_->Flush(); }
    leveldb::Status Sync() override { return base_->Sync(); }

   private:
    std::unique_ptr<leveldb::WritableFile> base_;
    const std::atomic<bool>* fail_;
  };
  leveldb::Status Wrap(leveldb::Status s, leveldb::WritableFile** r) {
    if (s.ok()) *r = new File(*r, &fail_appends);
    return s;
  }
};

}  // namespace neardup
