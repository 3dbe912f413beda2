// ReadOnlyEnv: a LevelDB Env under which a database opens and reads as usual while its files stay
// exactly as they were. LevelDB writes at every open (it replays the log into a new table, writes a
// new MANIFEST, points CURRENT at it, renames LOG and deletes what became obsolete); under this Env
// every file it creates, renames or writes lives in memory, a file it deletes is only hidden, and
// reads see the memory copy first, then the directory's own file.
//
//   ReadOnlyEnv env(leveldb::Env::Default());
//   leveldb::Options o;  o.env = &env;
//   leveldb::DB::Open(o, path, &db);     // path's files are left untouched, byte for byte
//
// The database's LOCK is taken on the real file (opening it changes neither its bytes nor its
// times), so a process writing the store at the same time keeps it, and the read-only open fails
// with LevelDB's lock error instead of reading files the writer is changing.
//
// Thread safety: as any Env (LevelDB calls it from its own threads); internally locked.
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <leveldb/env.h>

namespace neardup {

class ReadOnlyEnv : public leveldb::EnvWrapper {
 public:
  // `base` (not owned) holds the real files; it must outlive this Env.
  explicit ReadOnlyEnv(leveldb::Env* base);
  ~ReadOnlyEnv() override;

  leveldb::Status NewSequentialFile(const std::string& f, leveldb::SequentialFile** r) override;
  leveldb::Status NewRandomAccessFile(const std::string& f, leveldb::RandomAccessFile** r) override;
  leveldb::Status NewWritableFile(const std::string& f, leveldb::WritableFile** r) override;
  leveldb::Status NewAppendableFile(const std::string& f, leveldb::WritableFile** r) override;
  bool FileExists(const std::string& f) override;
  leveldb::Status GetChildren(const std::string& dir, std::vector<std::string>* r) override;
  leveldb::Status RemoveFile(const std::string& f) override;
  leveldb::Status CreateDir(const std::string& d) override;
  leveldb::Status RemoveDir(const std::string& d) override;
  leveldb::Status GetFileSize(const std::string& f, uint64_t* size) override;
  leveldb::Status RenameFile(const std::string& src, const std::string& target) override;
  leveldb::Status NewLogger(const std::string& f, leveldb::Logger** r) override;

 private:
  // The real file `f` is visible (not hidden by a delete or a rename away, not shadowed in memory).
  bool InBase(const std::string& f) const;  // requires mu_
  // Copies the real file `f` into memory under `to` (for a rename or an append of a real file).
  leveldb::Status CopyToMemory(const std::string& f, const std::string& to);  // requires mu_

  leveldb::Env* const base_;
  std::unique_ptr<leveldb::Env> mem_;
  mutable std::mutex mu_;
  std::set<std::string> hidden_;  // real files deleted or renamed away (guarded by mu_)
};

}  // namespace neardup
