#include "document/json_lines.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "document/json_fields.h"
#include "testing/temp_dir.h"

namespace neardup {
namespace {

using ::testing::HasSubstr;

TEST(ParseJsonLine, AnObjectIsParsedAndEveryOtherLineSaysWhatItIs) {
  simdjson::dom::object obj;
  ASSERT_TRUE(ParseJsonLine(R"({"url":"http://a.example/","n":3})", {}, &obj).ok());
  std::string url;
  ASSERT_TRUE(RequiredJsonString(obj, "url", &url).ok());
  EXPECT_EQ(url, "http://a.example/");
  EXPECT_THAT(ParseJsonLine("[1,2]", {}, &obj).message(), "line is not a JSON object");
  EXPECT_THAT(ParseJsonLine("not json", {}, &obj).message(), HasSubstr("not JSON"));
  EXPECT_THAT(ParseJsonLine(R"({"url":"http://a.exa)", {}, &obj).message(), HasSubstr("unclosed string"));
  EXPECT_EQ(ParseJsonLine("", {}, &obj).code(), StatusCode::kInvalidArgument);
}

TEST(ParseJsonLine, InvalidUtf8IsRefusedOrRepairedAsAsked) {
  const std::string line = "{\"title\":\"caf\xe9\"}";  // Latin-1, not UTF-8
  simdjson::dom::object obj;
  EXPECT_THAT(ParseJsonLine(line, {}, &obj).message(), HasSubstr("invalid UTF-8"));
  bool repaired = false;
  ASSERT_TRUE(ParseJsonLine(line, {.repair_utf8 = true}, &obj, &repaired).ok());
  EXPECT_TRUE(repaired);
  std::string title;
  ASSERT_TRUE(RequiredJsonString(obj, "title", &title).ok());
  EXPECT_EQ(title, "caf\xef\xbf\xbd");  // U+FFFD
  ASSERT_TRUE(ParseJsonLine(R"({"title":"ok"})", {.repair_utf8 = true}, &obj, &repaired).ok());
  EXPECT_FALSE(repaired);
}

TEST(ParseJsonLine, APaddedLineIsParsedInPlace) {
  std::string buffer = R"({"k":"v"})";
  const size_t length = buffer.size();
  buffer.resize(length + simdjson::SIMDJSON_PADDING, 'x');  // what follows the line does not matter
  simdjson::dom::object obj;
  ASSERT_TRUE(ParseJsonLine(std::string_view(buffer.data(), length), {.padded = true}, &obj).ok());
  std::string v;
  ASSERT_TRUE(RequiredJsonString(obj, "k", &v).ok());
  EXPECT_EQ(v, "v");
}

class ForEachJsonLineTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& text) {
    const std::string path = dir_.File("in.jsonl");
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  // Records the "n" fields of good lines; a line without one is refused (InvalidArgument).
  Status Each(std::string_view line, uint64_t number) {
    simdjson::dom::object obj;
    RETURN_IF_ERROR(ParseJsonLine(line, {.padded = true}, &obj));
    std::string n;
    RETURN_IF_ERROR(RequiredJsonString(obj, "n", &n));
    seen_.push_back(n + "@" + std::to_string(number));
    return Status::Ok();
  }
  test::TempDir dir_;
  std::vector<std::string> seen_;
};

TEST_F(ForEachJsonLineTest, BadLinesAreSkippedAndCountedBlankOnesIgnored) {
  const std::string path = Write("{\"n\":\"a\"}\n\n   \n{oops\n{\"m\":1}\n" + std::string(200, 'x') + "\n{\"n\":\"b\"}");
  auto stats = ForEachJsonLine(path, {.max_line_bytes = 100}, [&](std::string_view l, uint64_t n) { return Each(l, n); });
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_THAT(seen_, ::testing::ElementsAre("a@1", "b@7"));
  EXPECT_EQ(stats->lines, 7u);
  EXPECT_EQ(stats->records, 2u);
  EXPECT_EQ(stats->bad_lines, 3u);  // {oops, no "n", too long
}

TEST_F(ForEachJsonLineTest, StrictReadingStopsAtTheFirstBadLineNamingIt) {
  const std::string path = Write("{\"n\":\"a\"}\n{oops\n{\"n\":\"b\"}\n");
  auto stats = ForEachJsonLine(path, {.skip_bad_lines = false}, [&](std::string_view l, uint64_t n) { return Each(l, n); });
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(stats.status().message(), HasSubstr("in.jsonl:2: not JSON"));
  EXPECT_THAT(seen_, ::testing::ElementsAre("a@1"));
}

TEST_F(ForEachJsonLineTest, AnErrorOtherThanABadLineStopsTheLoopAndAMissingFileIsAnIoError) {
  const std::string path = Write("{\"n\":\"a\"}\n{\"n\":\"b\"}\n");
  int calls = 0;
  auto stats = ForEachJsonLine(path, {}, [&](std::string_view, uint64_t) {
    ++calls;
    return IoError("disk gone");
  });
  EXPECT_EQ(stats.status().code(), StatusCode::kIoError);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(ForEachJsonLine(dir_.File("none.jsonl"), {}, [](std::string_view, uint64_t) { return Status::Ok(); })
                .status()
                .code(),
            StatusCode::kIoError);
}

}  // namespace
}  // namespace neardup
