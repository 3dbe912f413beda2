#include "storage/read_only_env.h"

#include <algorithm>

#include <leveldb/helpers/memenv.h>

namespace neardup {

namespace {
// A logger that drops what LevelDB logs (its LOG file would be a write).
class NullLogger : public leveldb::Logger {
 public:
  void Logv(const char*, std::va_list) override {}
};
}  // namespace

ReadOnlyEnv::ReadOnlyEnv(leveldb::Env* base)
    : leveldb::EnvWrapper(base), base_(base), mem_(leveldb::NewMemEnv(base)) {}

ReadOnlyEnv::~ReadOnlyEnv() = default;

bool ReadOnlyEnv::InBase(const std::string& f) const {
  return hidden_.count(f) == 0 && !mem_->FileExists(f) && base_->FileExists(f);
}

leveldb::Status ReadOnlyEnv::CopyToMemory(const std::string& f, const std::string& to) {
  leveldb::SequentialFile* in = nullptr;
  leveldb::Status s = base_->NewSequentialFile(f, &in);
  if (!s.ok()) return s;
  std::unique_ptr<leveldb::SequentialFile> reader(in);
  leveldb::WritableFile* out = nullptr;
  s = mem_->NewWritableFile(to, &out);
  if (!s.ok()) return s;
  std::unique_ptr<leveldb::WritableFile> writer(out);
  std::vector<char> buf(1 << 16);
  for (;;) {
    leveldb::Slice got;
    s = reader->Read(buf.size(), &got, buf.data());
    if (!s.ok()) return s;
    if (got.empty()) break;
    s = writer->Append(got);
    if (!s.ok()) return s;
  }
  return writer->Close();
}

leveldb::Status ReadOnlyEnv::NewSequentialFile(const std::string& f, leveldb::SequentialFile** r) {
  std::lock_guard lock(mu_);
  if (mem_->FileExists(f)) return mem_->NewSequentialFile(f, r);
  if (hidden_.count(f)) return leveldb::Status::NotFound(f, "deleted in the read-only view");
  return base_->NewSequentialFile(f, r);
}

leveldb::Status ReadOnlyEnv::NewRandomAccessFile(const std::string& f, leveldb::RandomAccessFile** r) {
  std::lock_guard lock(mu_);
  if (mem_->FileExists(f)) return mem_->NewRandomAccessFile(f, r);
  if (hidden_.count(f)) return leveldb::Status::NotFound(f, "deleted in the read-only view");
  return base_->NewRandomAccessFile(f, r);
}

leveldb::Status ReadOnlyEnv::NewWritableFile(const std::string& f, leveldb::WritableFile** r) {
  std::lock_guard lock(mu_);
  hidden_.insert(f);  // a new file replaces a real one of the same name
  return mem_->NewWritableFile(f, r);
}

leveldb::Status ReadOnlyEnv::NewAppendableFile(const std::string& f, leveldb::WritableFile** r) {
  std::lock_guard lock(mu_);
  if (InBase(f)) {
    leveldb::Status s = CopyToMemory(f, f);
    if (!s.ok()) return s;
  }
  hidden_.insert(f);
  return mem_->NewAppendableFile(f, r);
}

bool ReadOnlyEnv::FileExists(const std::string& f) {
  std::lock_guard lock(mu_);
  return mem_->FileExists(f) || (hidden_.count(f) == 0 && base_->FileExists(f));
}

leveldb::Status ReadOnlyEnv::GetChildren(const std::string& dir, std::vector<std::string>* r) {
  std::lock_guard lock(mu_);
  r->clear();
  std::vector<std::string> real, mem;
  leveldb::Status s = base_->GetChildren(dir, &real);
  if (!s.ok() && !s.IsNotFound()) return s;
  (void)mem_->GetChildren(dir, &mem);
  for (const std::string& c : real) {
    if (hidden_.count(dir + "/" + c) == 0) r->push_back(c);
  }
  for (const std::string& c : mem) {
    if (std::find(r->begin(), r->end(), c) == r->end()) r->push_back(c);
  }
  return leveldb::Status::OK();
}

leveldb::Status ReadOnlyEnv::RemoveFile(const std::string& f) {
  std::lock_guard lock(mu_);
  const bool in_mem = mem_->FileExists(f);
  const bool in_base = hidden_.count(f) == 0 && base_->FileExists(f);
  if (!in_mem && !in_base) return leveldb::Status::NotFound(f, "no such file");
  if (in_mem) (void)mem_->RemoveFile(f);
  hidden_.insert(f);
  return leveldb::Status::OK();
}

leveldb::Status ReadOnlyEnv::CreateDir(const std::string& d) { return mem_->CreateDir(d); }
leveldb::Status ReadOnlyEnv::RemoveDir(const std::string& d) { return mem_->RemoveDir(d); }

leveldb::Status ReadOnlyEnv::GetFileSize(const std::string& f, uint64_t* size) {
  std::lock_guard lock(mu_);
  if (mem_->FileExists(f)) return mem_->GetFileSize(f, size);
  if (hidden_.count(f)) return leveldb::Status::NotFound(f, "deleted in the read-only view");
  return base_->GetFileSize(f, size);
}

leveldb::Status ReadOnlyEnv::RenameFile(const std::string& src, const std::string& target) {
  std::lock_guard lock(mu_);
  if (!mem_->FileExists(src)) {
    if (!InBase(src)) return leveldb::Status::NotFound(src, "no such file");
    leveldb::Status s = CopyToMemory(src, src);
    if (!s.ok()) return s;
  }
  hidden_.insert(src);
  hidden_.insert(target);
  return mem_->RenameFile(src, target);
}

leveldb::Status ReadOnlyEnv::NewLogger(const std::string&, leveldb::Logger** r) {
  *r = new NullLogger;
  return leveldb::Status::OK();
}

}  // namespace neardup
