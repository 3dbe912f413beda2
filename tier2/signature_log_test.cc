#include "tier2/signature_log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "testing/temp_dir.h"

namespace neardup::tier2 {
namespace {

namespace fs = std::filesystem;

class SignatureLogTest : public ::testing::Test {
 protected:
  test::TempDir tmp_;
  fs::path dir_ = tmp_.path();
  std::string path_ = tmp_.File("sigs-1.log");
};

TEST_F(SignatureLogTest, AppendsAndReadsBack) {
  auto log = SignatureLog::Open(FileEnv::Default(), path_, 0);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  const std::string big(100000, 'x');
  std::vector<std::string_view> payloads = {"alpha", "", big};
  std::vector<SignatureLog::Ref> refs;
  ASSERT_TRUE((*log)->Append(payloads, &refs).ok());
  ASSERT_EQ(refs.size(), 3u);
  EXPECT_EQ(refs[0].offset, 0u);
  EXPECT_EQ(refs[1].offset, SignatureLog::kHeaderBytes + 5);
  EXPECT_EQ((*log)->end(), 3 * SignatureLog::kHeaderBytes + 5 + big.size());
  std::string got;
  for (size_t i = 0; i < payloads.size(); ++i) {
    ASSERT_TRUE((*log)->Read(refs[i], &got).ok());
    EXPECT_EQ(got, payloads[i]);
  }
  ASSERT_TRUE((*log)->Sync().ok());
}

// The default file system, with each File's WillNeed hints recorded.
class HintRecordingEnv final : public FileEnv {
 public:
  struct Hint {
    uint64_t offset, length;
    bool operator==(const Hint&) const = default;
  };
  std::vector<Hint> hints;

  StatusOr<std::unique_ptr<File>> OpenFile(const std::string& path, FileMode mode) override {
    ASSIGN_OR_RETURN(auto f, base_->OpenFile(path, mode));
    return std::unique_ptr<File>(new Recording(std::move(f), &hints));
  }
  Status Rename(const std::string& from, const std::string& to) override { return base_->Rename(from, to); }
  Status Remove(const std::string& path) override { return base_->Remove(path); }
  Status CreateDirs(const std::string& dir) override { return base_->CreateDirs(dir); }
  Status SyncDir(const std::string& dir) override { return base_->SyncDir(dir); }
  Status ListDir(const std::string& dir, std::vector<std::string>* names) override { return base_->ListDir(dir, names); }
  bool Exists(const std::string& path) override { return base_->Exists(path); }
  StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path, bool shared) override {
    return base_->LockFile(path, shared);
  }

 private:
  class Recording final : public File {
   public:
    Recording(std::unique_ptr<File> f, std::vector<Hint>* hints) : File(f->path()), f_(std::move(f)), hints_(hints) {}
    Status ReadAt(uint64_t offset, std::span<const iovec> parts, size_t* read) const override {
      return f_->ReadAt(offset, parts, read);
    }
    Status WriteAt(uint64_t offset, std::string_view data) override { return f_->WriteAt(offset, data); }
    Status Sync() override { return f_->Sync(); }
    Status Truncate(uint64_t size) override { return f_->Truncate(size); }
    StatusOr<uint64_t> Size() const override { return f_->Size(); }
    void WillNeed(uint64_t offset, uint64_t length) const override {
      hints_->push_back({offset, length});
      f_->WillNeed(offset, length);
    }

   private:
    std::unique_ptr<File> f_;
    std::vector<Hint>* hints_;
  };
  FileEnv* base_ = FileEnv::Default();
};

// WillNeed hints records in offset order; records within a page of each other share one range.
TEST_F(SignatureLogTest, WillNeedHintsTheRecordsAsFewRanges) {
  HintRecordingEnv env;
  auto log = SignatureLog::Open(&env, path_, 0);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  const std::string big(100000, 'x');
  std::vector<std::string_view> payloads = {"alpha", "beta", big, "gamma"};
  std::vector<SignatureLog::Ref> refs;
  ASSERT_TRUE((*log)->Append(payloads, &refs).ok());
  (*log)->WillNeed({});
  EXPECT_TRUE(env.hints.empty());
  const std::vector<SignatureLog::Ref> wanted = {refs[3], refs[1], refs[0]};
  (*log)->WillNeed(wanted);
  const std::vector<HintRecordingEnv::Hint> want = {{0, refs[1].offset + refs[1].bytes()},
                                                    {refs[3].offset, refs[3].bytes()}};
  EXPECT_EQ(env.hints, want);
  // The records read back as they were: a hint changes nothing.
  std::string got;
  ASSERT_TRUE((*log)->Read(refs[3], &got).ok());
  EXPECT_EQ(got, "gamma");
}

TEST_F(SignatureLogTest, ReopenCutsWhatWasNotCommitted) {
  std::vector<SignatureLog::Ref> first, second;
  uint64_t committed = 0;
  {
    auto log = SignatureLog::Open(FileEnv::Default(), path_, 0);
    ASSERT_TRUE(log.ok());
    std::vector<std::string_view> a = {"one", "two"};
    ASSERT_TRUE((*log)->Append(a, &first).ok());
    committed = (*log)->end();
    std::vector<std::string_view> b = {"never committed"};
    ASSERT_TRUE((*log)->Append(b, &second).ok());
  }
  EXPECT_GT(fs::file_size(path_), committed);
  auto log = SignatureLog::Open(FileEnv::Default(), path_, committed);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(fs::file_size(path_), committed);
  std::string got;
  ASSERT_TRUE((*log)->Read(first[1], &got).ok());
  EXPECT_EQ(got, "two");
  // The dropped record's place is now beyond the end.
  EXPECT_EQ((*log)->Read(second[0], &got).code(), StatusCode::kCorruption);
  // New appends go where the dropped one was.
  std::vector<std::string_view> c = {"three"};
  ASSERT_TRUE((*log)->Append(c, &second).ok());
  EXPECT_EQ(second[0].offset, committed);
}

TEST_F(SignatureLogTest, TruncateDropsTheTail) {
  auto log = SignatureLog::Open(FileEnv::Default(), path_, 0);
  ASSERT_TRUE(log.ok());
  std::vector<SignatureLog::Ref> refs;
  std::vector<std::string_view> a = {"kept"};
  ASSERT_TRUE((*log)->Append(a, &refs).ok());
  const uint64_t end = (*log)->end();
  std::vector<std::string_view> b = {"dropped"};
  ASSERT_TRUE((*log)->Append(b, &refs).ok());
  ASSERT_TRUE((*log)->Truncate(end).ok());
  EXPECT_EQ(fs::file_size(path_), end);
  EXPECT_EQ((*log)->Truncate(end + 1).code(), StatusCode::kInvalidArgument);
}

TEST_F(SignatureLogTest, ShorterThanCommittedIsCorruption) {
  { std::ofstream(path_) << "short"; }
  auto log = SignatureLog::Open(FileEnv::Default(), path_, 1000);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), StatusCode::kCorruption);
  EXPECT_NE(log.status().message().find("1000"), std::string::npos) << log.status().message();
}

TEST_F(SignatureLogTest, DamagedRecordsAreCorruptionNotData) {
  std::vector<SignatureLog::Ref> refs;
  {
    auto log = SignatureLog::Open(FileEnv::Default(), path_, 0);
    ASSERT_TRUE(log.ok());
    std::vector<std::string_view> a = {"payload-one", "payload-two"};
    ASSERT_TRUE((*log)->Append(a, &refs).ok());
  }
  const uint64_t size = fs::file_size(path_);
  {
    // Flip one payload byte of the second record.
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(refs[1].offset + SignatureLog::kHeaderBytes + 3));
    f.put('#');
  }
  auto log = SignatureLog::Open(FileEnv::Default(), path_, size);
  ASSERT_TRUE(log.ok());
  std::string got;
  EXPECT_TRUE((*log)->Read(refs[0], &got).ok());
  Status s = (*log)->Read(refs[1], &got);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("checksum"), std::string::npos) << s.message();
  // A reference whose length disagrees with the header.
  SignatureLog::Ref wrong = refs[0];
  wrong.length += 1;
  s = (*log)->Read(wrong, &got);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  // A reference into the middle of a record.
  SignatureLog::Ref middle{refs[0].offset + 2, 4};
  EXPECT_EQ((*log)->Read(middle, &got).code(), StatusCode::kCorruption);
}

// Payloads written in place make the same file as payloads copied in, across appends that grow
// and shrink the staging buffer (a reused buffer must carry nothing of the append before).
TEST_F(SignatureLogTest, AppendFilledWritesWhatAppendWrites) {
  const std::string copied_path = (dir_ / "copied.log").string();
  auto filled = SignatureLog::Open(FileEnv::Default(), path_, 0);
  auto copied = SignatureLog::Open(FileEnv::Default(), copied_path, 0);
  ASSERT_TRUE(filled.ok() && copied.ok());
  const std::vector<std::vector<std::string>> rounds = {
      {"first", std::string(5000, 'a'), ""}, {"b"}, {std::string(20000, 'c'), "dd"}, {"e", "f"}};
  std::vector<SignatureLog::Ref> refs_filled, refs_copied;
  for (const auto& round : rounds) {
    std::vector<std::string_view> views(round.begin(), round.end());
    ASSERT_TRUE((*copied)->Append(views, &refs_copied).ok());
    std::vector<uint32_t> sizes;
    for (const std::string& p : round) sizes.push_back(static_cast<uint32_t>(p.size()));
    size_t calls = 0;
    ASSERT_TRUE((*filled)
                    ->AppendFilled(
                        sizes,
                        [&](size_t i, char* dst) {
                          ++calls;
                          std::memcpy(dst, round[i].data(), round[i].size());
                        },
                        &refs_filled)
                    .ok());
    EXPECT_EQ(calls, round.size());
    ASSERT_EQ(refs_filled.size(), refs_copied.size());
    for (size_t i = 0; i < refs_filled.size(); ++i) {
      EXPECT_EQ(refs_filled[i].offset, refs_copied[i].offset);
      EXPECT_EQ(refs_filled[i].length, refs_copied[i].length);
      std::string got;
      ASSERT_TRUE((*filled)->Read(refs_filled[i], &got).ok());
      EXPECT_EQ(got, round[i]);
    }
  }
  auto bytes = [](const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  EXPECT_EQ(bytes(path_), bytes(copied_path));
}

TEST_F(SignatureLogTest, ARecordOverTheLimitWritesNothing) {
  auto log = SignatureLog::Open(FileEnv::Default(), path_, 0);
  ASSERT_TRUE(log.ok());
  std::vector<SignatureLog::Ref> refs;
  ASSERT_TRUE((*log)->Append(std::vector<std::string_view>{"kept"}, &refs).ok());
  const uint64_t end = (*log)->end();
  const std::vector<uint32_t> sizes = {3, SignatureLog::kMaxPayload + 1};
  bool called = false;
  Status s = (*log)->AppendFilled(sizes, [&](size_t, char*) { called = true; }, &refs);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("record 1 has " + std::to_string(SignatureLog::kMaxPayload + 1) + " bytes"),
            std::string::npos)
      << s.message();
  EXPECT_FALSE(called);
  EXPECT_EQ((*log)->end(), end);
  EXPECT_EQ(fs::file_size(path_), end);
}

// Scan visits every record in order with its ref, across its read pieces (records bigger than a
// piece too), and reports damage as Corruption at the damaged record's offset.
TEST_F(SignatureLogTest, ScanVisitsEveryRecordInOrderAndFindsDamage) {
  auto log = SignatureLog::Open(FileEnv::Default(), path_, 0);
  ASSERT_TRUE(log.ok());
  std::vector<std::string> payloads;
  for (int i = 0; i < 3000; ++i) payloads.push_back(std::string(static_cast<size_t>(i % 7 == 0 ? 9000 : i % 50), char('a' + i % 26)));
  payloads.push_back(std::string(12u << 20, 'B'));  // over one read piece
  payloads.push_back("tail");
  std::vector<std::string_view> views(payloads.begin(), payloads.end());
  std::vector<SignatureLog::Ref> refs;
  ASSERT_TRUE((*log)->Append(views, &refs).ok());
  size_t n = 0;
  Status s = (*log)->Scan([&](SignatureLog::Ref ref, std::string_view payload) {
    EXPECT_EQ(ref.offset, refs[n].offset);
    EXPECT_EQ(ref.length, refs[n].length);
    EXPECT_EQ(payload, payloads[n]) << n;
    ++n;
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(n, payloads.size());
  // visit's error stops the scan.
  n = 0;
  s = (*log)->Scan([&](SignatureLog::Ref, std::string_view) { return ++n == 5 ? NotFound("stop") : Status::Ok(); });
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(n, 5u);
  // A damaged payload byte in record 1001 (9000 bytes).
  {
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(refs[1001].offset + SignatureLog::kHeaderBytes));
    f.put('\x01');
  }
  s = (*log)->Scan([&](SignatureLog::Ref, std::string_view) { return Status::Ok(); });
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("offset " + std::to_string(refs[1001].offset)), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace neardup::tier2
