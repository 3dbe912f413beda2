// The run's outputs (pipeline/output.h): the status and --out lines, a status file cut back to
// before the batch a restart writes again, and --out written from queries.
#include "pipeline/output.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "testing/files.h"
#include "testing/temp_dir.h"

namespace neardup::pipeline::internal {
namespace {

using test::ReadFile;
using tier1::Classification;
using tier1::StatusAnswer;

StatusAnswer Duplicate() {
  StatusAnswer a;
  a.status = StatusAnswer::kDuplicate;
  a.group = 7;
  a.winner_url = "https://a.example/w";
  a.verified = true;
  a.similarity_to_winner = 0.95;
  a.duplicate_of = "https://a.example/k";
  a.similarity_to_duplicate_of = 0.97;
  return a;
}

TEST(OutputLines, AStatusLineCarriesTheAnswerTheClassificationAndWhereItCameFrom) {
  std::string out;
  AppendStatusLine(&out, "https://a.example/\"q\"", Duplicate(), Classification::kTier2, 3, 41, 2);
  EXPECT_EQ(out,
            "{\"url\":\"https://a.example/\\\"q\\\"\",\"status\":\"duplicate\",\"group\":7,\"winner\":"
            "\"https://a.example/w\",\"similarity_to_winner\":0.95,\"duplicate_of\":\"https://a.example/k\","
            "\"similarity_to_duplicate_of\":0.97,\"verified\":true,\"route\":\"tier2\",\"batch\":3,\"line\":41,"
            "\"map_version\":2}\n");
  // A redirect: no similarities, but its flag; an unverified page says so.
  StatusAnswer r = Duplicate();
  r.redirect = true;
  r.verified = false;
  out.clear();
  AppendStatusLine(&out, "u", r, Classification::kRedirect, 1, 1, 1);
  EXPECT_EQ(out.find("similarity"), std::string::npos) << out;
  EXPECT_NE(out.find(",\"verified\":false,\"redirect\":true,\"route\":\"redirect\""), std::string::npos) << out;
}

TEST(OutputLines, AGroupLineSaysWhenThePageWasNotCrawled) {
  std::string out;
  AppendGroupLine(&out, "u", Duplicate());
  EXPECT_EQ(out,
            "{\"url\":\"u\",\"group\":7,\"winner\":\"https://a.example/w\",\"status\":\"duplicate\","
            "\"similarity_to_winner\":0.95,\"duplicate_of\":\"https://a.example/k\","
            "\"similarity_to_duplicate_of\":0.97}\n");
  out.clear();
  AppendGroupLine(&out, "gone", StatusAnswer{});
  EXPECT_EQ(out, "{\"url\":\"gone\",\"group\":0,\"winner\":\"\",\"status\":\"unknown\",\"crawled\":false}\n");
}

// Lines of batches 1..3, two each, and a torn line of batch 3.
std::string Lines() {
  std::string s;
  for (int b = 1; b <= 3; ++b) {
    for (int i = 0; i < 2; ++i) s += "{\"url\":\"u" + std::to_string(b * 10 + i) + "\",\"batch\":" + std::to_string(b) + "}\n";
  }
  return s + "{\"url\":\"torn\",\"bat";
}

uint64_t Keep(const std::string& path, uint64_t from) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  EXPECT_NE(f, nullptr);
  auto keep = KeepBeforeBatch(f, std::filesystem::file_size(path), from);
  std::fclose(f);
  EXPECT_TRUE(keep.ok()) << keep.status().ToString();
  return keep.ok() ? *keep : ~uint64_t{0};
}

TEST(StatusFileTest, KeepsTheWholeLinesBeforeABatch) {
  test::TempDir dir;
  const std::string path = dir.File("status.jsonl");
  const std::string lines = Lines();
  std::ofstream(path) << lines;
  const size_t batch3 = lines.find("{\"url\":\"u30\"");
  const size_t torn = lines.find("{\"url\":\"torn\"");
  EXPECT_EQ(Keep(path, 3), batch3);
  EXPECT_EQ(Keep(path, 4), torn);  // only the torn line goes
  EXPECT_EQ(Keep(path, 1), 0u);
  std::ofstream(path) << "no batch here\n" + lines.substr(batch3);
  EXPECT_EQ(Keep(path, 3), 14u);  // a line without a batch ends the search
}

TEST(StatusFileTest, AResumedRunCutsTheRedoneBatchAndAppends) {
  test::TempDir dir;
  const std::string path = dir.File("status.jsonl");
  const std::string lines = Lines();
  std::ofstream(path) << lines;
  {
    auto f = StatusFile::Open(path, /*resuming=*/true, /*redo_batch=*/3);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    ASSERT_TRUE((*f)->Append("{\"url\":\"again\",\"batch\":3}\n").ok());
    ASSERT_TRUE((*f)->Sync().ok());
  }
  EXPECT_EQ(ReadFile(path), lines.substr(0, lines.find("{\"url\":\"u30\"")) + "{\"url\":\"again\",\"batch\":3}\n");
  {
    auto f = StatusFile::Open(path, /*resuming=*/false, 0);  // a new input: anew
    ASSERT_TRUE(f.ok()) << f.status().ToString();
  }
  EXPECT_EQ(ReadFile(path), "");
  EXPECT_EQ(StatusFile::Open(dir.File("no/such/dir/status"), false, 0).status().code(), StatusCode::kIoError);
}

TEST(GroupsFileTest, OneLinePerUrlFromTheQueries) {
  test::TempDir dir;
  const std::string path = dir.File("groups.jsonl");
  int queries = 0;
  auto query = [&](const std::string& url, StatusAnswer* a) -> Status {
    ++queries;
    *a = StatusAnswer{};
    a->status = StatusAnswer::kUnique;
    a->group = url.size();
    a->winner_url = url;
    return Status::Ok();
  };
  ASSERT_TRUE(WriteGroupsFile(path, {"a", "bb"}, query).ok());
  EXPECT_EQ(queries, 2);
  EXPECT_EQ(ReadFile(path),
            "{\"url\":\"a\",\"group\":1,\"winner\":\"a\",\"status\":\"unique\"}\n"
            "{\"url\":\"bb\",\"group\":2,\"winner\":\"bb\",\"status\":\"unique\"}\n");
  auto failing = [](const std::string&, StatusAnswer*) { return Corruption("unreadable record"); };
  EXPECT_EQ(WriteGroupsFile(path, {"a"}, failing).code(), StatusCode::kCorruption);
  EXPECT_EQ(WriteGroupsFile(dir.File("no/such/dir/g"), {"a"}, query).code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace neardup::pipeline::internal
