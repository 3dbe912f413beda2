// LineReader: lines in place or copied, each with its padding; long lines streamed past; a
// followed file read no further than it is readable.
#include "common/line_reader.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace neardup {
namespace {

struct Line {
  std::string text;
  bool too_long;
  uint64_t number, bytes;
};

std::vector<Line> ReadAll(LineReader& r) {
  std::vector<Line> out;
  std::string_view line;
  bool too_long = false;
  while (r.Next(&line, &too_long)) out.push_back({std::string(line), too_long, r.line_number(), r.bytes()});
  return out;
}

std::FILE* FileWith(const std::string& bytes) {
  std::FILE* f = std::tmpfile();
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::rewind(f);
  return f;
}

TEST(LineReader, LinesNumbersAndBytes) {
  std::FILE* f = FileWith("a\n\nbcd\r\nlast");
  auto r = LineReader::FromStream(f, {});
  const auto lines = ReadAll(*r);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].text, "a");
  EXPECT_EQ(lines[1].text, "");
  EXPECT_EQ(lines[2].text, "bcd\r");  // a carriage return is the caller's to strip
  EXPECT_EQ(lines[3].text, "last");   // no newline at the end
  EXPECT_EQ(lines[3].number, 4u);
  EXPECT_EQ(lines[2].bytes, 8u);
  EXPECT_EQ(lines[3].bytes, 12u);
  EXPECT_TRUE(r->status().ok());
  EXPECT_EQ(r->total_bytes().value_or(0), 12u);
  std::fclose(f);
}

// A line over the limit is reported too long, whether it lies in the buffer or spans reads (over
// 1 MiB), and the next line is read as usual.
TEST(LineReader, LongLinesStreamPast) {
  const std::string big(3 << 20, 'x');
  std::FILE* f = FileWith("short\n" + std::string(200, 'y') + "\n" + big + "\nafter\n" + big);
  LineReaderOptions o;
  o.max_line_bytes = 100;
  auto r = LineReader::FromStream(f, o);
  const auto lines = ReadAll(*r);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_FALSE(lines[0].too_long);
  EXPECT_TRUE(lines[1].too_long);
  EXPECT_TRUE(lines[2].too_long);
  EXPECT_EQ(lines[2].text, "");
  EXPECT_EQ(lines[3].text, "after");
  EXPECT_TRUE(lines[4].too_long);
  std::fclose(f);
}

// Every line handed out has `padding` bytes allocated after it, in place or copied: reading them
// is defined (AddressSanitizer checks it).
TEST(LineReader, PaddingIsReadable) {
  std::string text;
  for (int i = 0; i < 30000; ++i) text += std::string(static_cast<size_t>(i % 97), 'a' + static_cast<char>(i % 26)) + "\n";
  std::FILE* f = FileWith(text);
  LineReaderOptions o;
  o.padding = 64;
  auto r = LineReader::FromStream(f, o);
  std::string_view line;
  bool too_long = false;
  uint64_t n = 0, sum = 0;
  while (r->Next(&line, &too_long)) {
    ++n;
    volatile char last = line.data()[line.size() + o.padding - 1];
    (void)last;
    sum += line.size();
  }
  EXPECT_EQ(n, 30000u);
  EXPECT_EQ(sum + n, text.size());
  std::fclose(f);
}

// Following a growing file: no further than readable(), paused there, and on once it grows.
TEST(LineReader, FollowsAGrowingFile) {
  std::FILE* f = FileWith("one\ntwo\nthree\n");
  uint64_t readable = 4;
  LineReaderOptions o;
  o.readable = [&] { return readable; };
  auto r = LineReader::FromStream(f, o);
  auto lines = ReadAll(*r);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(r->paused());
  readable = 14;
  lines = ReadAll(*r);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1].text, "three");
  EXPECT_EQ(lines[1].number, 3u);
  EXPECT_TRUE(r->paused());
  std::fclose(f);
}

// Dropping the pages read (past 128 MiB, so the advice is given, pages within 64 MiB of the read
// position kept) changes no line. The lines are compared by a running hash: 150 MB of them.
TEST(LineReader, DroppingReadPagesChangesNoLine) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  auto mix = [](uint64_t h, std::string_view line, uint64_t bytes) {
    return (h ^ std::hash<std::string_view>()(line)) * 0x9E3779B97F4A7C15ull + bytes;
  };
  uint64_t expected = 0, total = 0, lines = 0;
  std::string line;
  for (int i = 0; total < (uint64_t{150} << 20); ++i) {
    line = "line " + std::to_string(i) + " " + std::string(90 + i % 37, static_cast<char>('a' + i % 26));
    std::fwrite(line.data(), 1, line.size(), f);
    std::fputc('\n', f);
    total += line.size() + 1;
    expected = mix(expected, line, total);
    ++lines;
  }
  std::fflush(f);
  std::rewind(f);
  LineReaderOptions options;
  options.drop_read_pages = true;
  auto dropped = LineReader::FromStream(f, options);
  uint64_t got = 0, got_lines = 0;
  std::string_view text;
  bool too_long = false;
  while (dropped->Next(&text, &too_long)) {
    ASSERT_FALSE(too_long);
    got = mix(got, text, dropped->bytes());
    ++got_lines;
  }
  EXPECT_TRUE(dropped->status().ok());
  EXPECT_EQ(got_lines, lines);
  EXPECT_EQ(got, expected);
  EXPECT_EQ(dropped->bytes(), total);
  std::fclose(f);
}

TEST(LineReader, OpenNamesWhatAndWhere) {
  auto r = LineReader::Open("/nonexistent/x.jsonl", {}, "emails");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("cannot open emails /nonexistent/x.jsonl"), std::string::npos);
}

}  // namespace
}  // namespace neardup
