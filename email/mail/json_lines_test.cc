#include "email/mail/json_lines.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "testing/temp_dir.h"

namespace neardup::email {
namespace {

std::string WriteFile(const test::TempDir& dir, const std::string& text) {
  const std::string path = dir.File("in.jsonl");
  std::ofstream(path) << text;
  return path;
}

TEST(ForEachJsonLine, HandsEveryNonBlankLineWithItsNumberAndCountsRefusedOnes) {
  test::TempDir dir;
  const std::string path = WriteFile(dir, "{\"a\":1}\n\n  \t\nbad\n{\"a\":2}\n");
  std::vector<std::pair<std::string, uint64_t>> seen;
  auto stats = ForEachJsonLine(path, 1 << 20, [&](std::string_view line, uint64_t n) -> Status {
    seen.emplace_back(std::string(line), n);
    if (line == "bad") return InvalidArgument("not a record");
    return Status::Ok();
  });
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_EQ(stats->lines, 5u);
  EXPECT_EQ(stats->records, 2u);
  EXPECT_EQ(stats->bad_lines, 1u);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0], (std::pair<std::string, uint64_t>{"{\"a\":1}", 1}));
  EXPECT_EQ(seen[1], (std::pair<std::string, uint64_t>{"bad", 4}));
  EXPECT_EQ(seen[2], (std::pair<std::string, uint64_t>{"{\"a\":2}", 5}));
}

TEST(ForEachJsonLine, SkipsALineLongerThanTheLimitWithoutHandingIt) {
  test::TempDir dir;
  const std::string path = WriteFile(dir, std::string(100, 'x') + "\n{}\n");
  uint64_t calls = 0;
  auto stats = ForEachJsonLine(path, 50, [&](std::string_view, uint64_t) {
    ++calls;
    return Status::Ok();
  });
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(calls, 1u);
  EXPECT_EQ(stats->bad_lines, 1u);
  EXPECT_EQ(stats->records, 1u);
}

TEST(ForEachJsonLine, AnErrorOtherThanInvalidArgumentStopsTheLoop) {
  test::TempDir dir;
  const std::string path = WriteFile(dir, "1\n2\n3\n");
  uint64_t calls = 0;
  auto stats = ForEachJsonLine(path, 1 << 20, [&](std::string_view, uint64_t n) -> Status {
    ++calls;
    return n == 2 ? IoError("disk full") : Status::Ok();
  });
  EXPECT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), StatusCode::kIoError);
  EXPECT_EQ(calls, 2u);
}

TEST(ForEachJsonLine, AMissingFileIsAnError) {
  test::TempDir dir;
  auto stats = ForEachJsonLine(dir.File("absent.jsonl"), 1 << 20, [](std::string_view, uint64_t) { return Status::Ok(); });
  EXPECT_FALSE(stats.ok());
}

}  // namespace
}  // namespace neardup::email
