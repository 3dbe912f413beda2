#include "document/crawl_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>

#include "testing/temp_dir.h"

namespace neardup {
namespace {

using ::testing::HasSubstr;

// Feeds `content` to a CrawlReader through a temporary stream; collects records and bad lines.
struct ReadAll {
  std::vector<CrawlRecord> records;
  std::vector<BadLine> bad;
  CrawlReaderStats stats;
  explicit ReadAll(const std::string& content, CrawlReaderOptions options = {}) {
    std::FILE* f = std::tmpfile();
    std::fwrite(content.data(), 1, content.size(), f);
    std::rewind(f);
    auto reader = CrawlReader::FromStream(f, options);
    reader->set_on_bad_line([this](const BadLine& b) { bad.push_back(b); });
    CrawlRecord r;
    while (reader->Next(&r)) records.push_back(r);
    EXPECT_TRUE(reader->status().ok());
    stats = reader->stats();
    std::fclose(f);
  }
};

TEST(CrawlReader, ReadsAllFields) {
  ReadAll r(R"({"url":"https://a.example/x?id=1","html":"<p>hi</p>","popularity":2.5,)"
            R"("fetched_at":"2024-06-03T00:09:48Z","market":"uk","extra":[1,2,{"z":null}]})" "\n");
  ASSERT_EQ(r.records.size(), 1u);
  const auto& c = r.records[0];
  EXPECT_EQ(c.url, "https://a.example/x?id=1");
  EXPECT_TRUE(c.is_html);
  EXPECT_EQ(c.body, "<p>hi</p>");
  EXPECT_DOUBLE_EQ(c.popularity, 2.5);
  EXPECT_EQ(*c.fetched_at_ms, 1717373388000);
  EXPECT_EQ(c.market, "uk");
  EXPECT_EQ(c.line, 1u);
}

// FormatJsonLine writes what ParseCrawlRecord reads back as the same record, for every kind of
// record and the fields' edge values (a body with quotes, controls and non-ASCII text; a
// popularity that needs all its digits; a time before the epoch with milliseconds).
TEST(CrawlReader, FormatJsonLineReadsBackAsTheSameRecord) {
  std::vector<CrawlRecord> in(5);
  in[0].url = "https://a.example/x?q=\"1\"";
  in[0].body = "<p>caf\xc3\xa9 \"quoted\"\n\ttab\\ \x01</p>";
  in[0].is_html = true;
  in[0].popularity = 0.1 + 0.2;
  in[0].fetched_at_ms = 1717373388123;
  in[0].market = "uk";
  in[1].url = "http://b.example/";
  in[1].body = "plain words";
  in[1].fetched_at_ms = -1500;
  in[2].url = "https://c.example/old";
  in[2].redirect_to = "https://c.example/new";
  in[2].popularity = 7;
  in[3].url = "https://d.example/404";
  in[3].gone = true;
  in[3].fetched_at_ms = 1717373388000;
  in[4].url = "https://e.example/empty";
  in[4].is_html = true;
  for (const CrawlRecord& r : in) {
    const std::string line = FormatJsonLine(r);
    SCOPED_TRACE(line);
    EXPECT_EQ(line.find('\n'), std::string::npos);
    CrawlRecord back;
    ASSERT_TRUE(ParseCrawlRecord(line, &back).ok());
    EXPECT_EQ(back.url, r.url);
    EXPECT_EQ(back.body, r.body);
    EXPECT_EQ(back.is_html, r.is_html);
    EXPECT_EQ(back.redirect_to, r.redirect_to);
    EXPECT_EQ(back.gone, r.gone);
    EXPECT_EQ(back.popularity, r.popularity);  // exactly
    EXPECT_EQ(back.fetched_at_ms, r.fetched_at_ms);
    EXPECT_EQ(back.market, r.market);
  }
}

// end_offset is where the record's line ends (newline included), whatever lines came before it:
// the pipeline identifies the consumed part of an input by it.
TEST(CrawlReader, EndOffsetIsTheByteAfterTheRecordsLine) {
  const std::string a = R"({"url":"http://a.example/","text":"one"})" "\n";
  const std::string bad = "not json\n\n";
  const std::string b = R"({"url":"http://b.example/","text":"two"})";  // no final newline
  ReadAll r(a + bad + b);
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.records[0].end_offset, a.size());
  EXPECT_EQ(r.records[1].end_offset, a.size() + bad.size() + b.size());
}

TEST(CrawlReader, BadLinesAreReportedWithLineNumberAndSkipped) {
  const std::string input =
      "{\"url\":\"http://ok.example/1\",\"text\":\"one\"}\n"
      "not json at all\n"
      "{\"url\":\"http://ok.example/2\",\"text\":\"trunc\n"           // truncated JSON
      "{\"text\":\"no url\"}\n"
      "{\"url\":\"ftp://x.example/\",\"text\":\"t\"}\n"
      "{\"url\":\"relative/path\",\"text\":\"t\"}\n"
      "{\"url\":42,\"text\":\"t\"}\n"
      "{\"url\":\"http://ok.example/3\"}\n"                          // no content
      "{\"url\":\"http://ok.example/4\",\"text\":7}\n"
      "{\"url\":\"http://ok.example/5\",\"text\":\"x\",\"popularity\":-1}\n"
      "{\"url\":\"http://ok.example/6\",\"text\":\"x\",\"popularity\":\"high\"}\n"
      "{\"url\":\"http://ok.example/7\",\"text\":\"x\",\"fetched_at\":\"yesterday\"}\n"
      "[1,2,3]\n"
      "\n"
      "{\"url\":\"http://ok.example/8\",\"text\":\"last\"}";            // no trailing newline
  ReadAll r(input);
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.records[0].url, "http://ok.example/1");
  EXPECT_EQ(r.records[1].url, "http://ok.example/8");
  EXPECT_EQ(r.records[1].line, 15u);
  ASSERT_EQ(r.bad.size(), 12u);
  EXPECT_EQ(r.stats.bad_lines, 12u);
  EXPECT_EQ(r.bad[0].line, 2u);
  EXPECT_THAT(r.bad[0].reason, HasSubstr("JSON"));
  EXPECT_EQ(r.bad[1].line, 3u);
  EXPECT_THAT(r.bad[2].reason, HasSubstr("missing required field 'url'"));
  EXPECT_THAT(r.bad[3].reason, HasSubstr("absolute http(s) URL"));
  EXPECT_THAT(r.bad[4].reason, HasSubstr("absolute http(s) URL"));
  EXPECT_THAT(r.bad[5].reason, HasSubstr("'url' must be a string"));
  EXPECT_THAT(r.bad[6].reason, HasSubstr("needs 'html' or 'text'"));
  EXPECT_THAT(r.bad[7].reason, HasSubstr("'text' must be a string"));
  EXPECT_THAT(r.bad[8].reason, HasSubstr("popularity"));
  EXPECT_THAT(r.bad[9].reason, HasSubstr("popularity"));
  EXPECT_THAT(r.bad[10].reason, HasSubstr("fetched_at"));
  EXPECT_THAT(r.bad[11].reason, HasSubstr("not a JSON object"));
  EXPECT_EQ(r.stats.lines, 15u);
}

TEST(CrawlReader, FiftyMegabyteLineIsSkippedAndReadingGoesOn) {
  std::string input = "{\"url\":\"http://a.example/\",\"text\":\"before\"}\n{\"url\":\"http://b.example/\",\"text\":\"";
  input.append(50u << 20, 'x');
  input += "\"}\n{\"url\":\"http://c.example/\",\"text\":\"after\"}\n";
  ReadAll r(input);
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.records[1].url, "http://c.example/");
  EXPECT_EQ(r.records[1].line, 3u);
  ASSERT_EQ(r.bad.size(), 1u);
  EXPECT_EQ(r.bad[0].line, 2u);
  EXPECT_THAT(r.bad[0].reason, HasSubstr("longer than max_line_bytes"));
}

TEST(CrawlReader, LineLimitIsConfigurable) {
  ReadAll r("{\"url\":\"http://a.example/\",\"text\":\"" + std::string(3000, 'y') + "\"}\n",
            [] {
              CrawlReaderOptions o;
              o.max_line_bytes = 2048;
              return o;
            }());
  EXPECT_TRUE(r.records.empty());
  EXPECT_EQ(r.bad.size(), 1u);
}

TEST(CrawlReader, InvalidUtf8IsRepairedNotDropped) {
  ReadAll r("{\"url\":\"http://a.example/\",\"text\":\"caf\xE9 ok\"}\n");
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].body, "caf\xEF\xBF\xBD ok");
  EXPECT_EQ(r.stats.utf8_repaired, 1u);
}

TEST(CrawlReader, EmptyHtmlAndBothHtmlAndText) {
  ReadAll r("{\"url\":\"http://a.example/\",\"html\":\"\"}\n"
            "{\"url\":\"http://b.example/\",\"html\":\"<b>h</b>\",\"text\":\"t\"}\n");
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_TRUE(r.records[0].is_html);
  EXPECT_EQ(r.records[0].body, "");
  EXPECT_TRUE(r.records[1].is_html);  // html wins over text
  EXPECT_EQ(r.records[1].body, "<b>h</b>");
}

TEST(CrawlReader, RedirectsIncludingToItself) {
  ReadAll r("{\"url\":\"http://a.example/\",\"redirect_to\":\"http://b.example/\"}\n"
            "{\"url\":\"http://c.example/\",\"redirect_to\":\"http://c.example/\",\"text\":\"ignored\"}\n"
            "{\"url\":\"http://d.example/\",\"redirect_to\":\"nowhere\"}\n");
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_TRUE(r.records[0].is_redirect());
  EXPECT_EQ(r.records[1].redirect_to, r.records[1].url);  // accepted; cycles are the consumer's to report
  EXPECT_TRUE(r.records[1].body.empty());
  ASSERT_EQ(r.bad.size(), 1u);
  EXPECT_THAT(r.bad[0].reason, HasSubstr("redirect_to"));
}

TEST(CrawlReader, GoneRecordsNeedNoContentAndIgnoreAnyGiven) {
  ReadAll r("{\"url\":\"http://a.example/\",\"gone\":true}\n"
            "{\"url\":\"http://b.example/\",\"gone\":true,\"text\":\"ignored\",\"redirect_to\":\"http://c.example/\","
            "\"popularity\":3,\"market\":\"de\"}\n"
            "{\"url\":\"http://c.example/\",\"gone\":false,\"text\":\"kept\"}\n"
            "{\"url\":\"http://d.example/\",\"gone\":null,\"html\":\"<p>kept</p>\"}\n");
  ASSERT_EQ(r.records.size(), 4u) << (r.bad.empty() ? "" : r.bad[0].reason);
  EXPECT_TRUE(r.records[0].gone);
  EXPECT_FALSE(r.records[0].has_content());
  EXPECT_FALSE(r.records[0].is_redirect());
  EXPECT_TRUE(r.records[0].body.empty());
  EXPECT_TRUE(r.records[1].gone);
  EXPECT_TRUE(r.records[1].body.empty());
  EXPECT_FALSE(r.records[1].is_html);
  EXPECT_TRUE(r.records[1].redirect_to.empty());
  EXPECT_DOUBLE_EQ(r.records[1].popularity, 3);
  EXPECT_EQ(r.records[1].market, "de");
  // false, or null, is the same as absent.
  EXPECT_FALSE(r.records[2].gone);
  EXPECT_TRUE(r.records[2].has_content());
  EXPECT_EQ(r.records[2].body, "kept");
  EXPECT_FALSE(r.records[3].gone);
  EXPECT_TRUE(r.records[3].is_html);
  // The reader reuses the record it fills: a gone record leaves nothing behind for the next one.
  CrawlRecord rec;
  ASSERT_TRUE(ParseCrawlRecord(R"({"url":"http://a.example/","gone":true})", &rec).ok());
  ASSERT_TRUE(ParseCrawlRecord(R"({"url":"http://a.example/","text":"back"})", &rec).ok());
  EXPECT_FALSE(rec.gone);
  EXPECT_EQ(rec.body, "back");
}

TEST(CrawlReader, MistypedGoneIsABadLine) {
  ReadAll r("{\"url\":\"http://a.example/\",\"gone\":\"true\"}\n"
            "{\"url\":\"http://b.example/\",\"gone\":1,\"text\":\"t\"}\n"
            "{\"url\":\"http://c.example/\",\"gone\":[true]}\n"
            "{\"url\":\"http://d.example/\",\"gone\":false}\n"  // not gone, and no content
            "{\"url\":\"http://e.example/\",\"gone\":true}\n");
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].url, "http://e.example/");
  ASSERT_EQ(r.bad.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(r.bad[i].line, static_cast<uint64_t>(i + 1));
    EXPECT_THAT(r.bad[i].reason, HasSubstr("field 'gone' must be a boolean"));
  }
  EXPECT_EQ(r.bad[3].line, 4u);
  EXPECT_THAT(r.bad[3].reason, HasSubstr("needs 'html' or 'text'"));
}

// Lines are parsed in place in the read buffer (1 MiB) when they lie whole in it, and copied when
// they straddle its end: every record comes out the same either way, whatever its line ending.
TEST(CrawlReader, LinesAcrossReadBufferBoundariesParseTheSame) {
  std::string input;
  std::vector<std::string> bodies;
  for (int i = 0; i < 60; ++i) {
    bodies.push_back(std::string(static_cast<size_t>(1000 + (i * 7919) % 90000), static_cast<char>('a' + i % 26)));
    input += "{\"url\":\"http://a.example/" + std::to_string(i) + "\",\"text\":\"" + bodies.back() + "\"}";
    input += i % 3 == 0 ? "\r\n" : "\n";
  }
  input += "{\"url\":\"http://a.example/last\",\"text\":\"no newline at the end\"}";
  ASSERT_GT(input.size(), 2u << 20);
  ReadAll r(input);
  ASSERT_EQ(r.records.size(), 61u);
  EXPECT_TRUE(r.bad.empty());
  for (int i = 0; i < 60; ++i) {
    EXPECT_EQ(r.records[i].url, "http://a.example/" + std::to_string(i));
    EXPECT_EQ(r.records[i].body, bodies[i]) << "record " << i;
    EXPECT_EQ(r.records[i].line, static_cast<uint64_t>(i + 1));
  }
  EXPECT_EQ(r.records[60].body, "no newline at the end");
  EXPECT_EQ(r.stats.bytes, input.size());
}

TEST(CrawlReader, WantUrlPassesOverRefusedRecordsAfterReadingTheirUrl) {
  CrawlReaderOptions o;
  std::vector<std::string> asked;
  o.want_url = [&](std::string_view url) {
    asked.emplace_back(url);
    return url.find("keep") != std::string_view::npos;
  };
  ReadAll r("{\"url\":\"http://a.example/keep/1\",\"text\":\"one\"}\n"
            "{\"url\":\"http://a.example/drop/2\",\"text\":\"two\"}\n"
            "{\"text\":\"url last\",\"popularity\":1,\"url\":\"http:\\/\\/a.example\\/keep\\/3\"}\n"
            "{\"url\":\"http://a.example/drop/4\",\"text\":7}\n"          // bad, but passed over
            "{\"url\":\"http://a.example/keep/5\",\"text\":7}\n"          // bad and wanted: reported
            "{\"url\":\"http://a.example/keep/6\",\"text\":\"trunc\n"   // wanted: parsed, reported
            "{\"url\":\"http://a.example/keep/7\",\"text\":\"caf\xE9\"}\n"  // invalid UTF-8: parsed, repaired
            "{\"url\":\"http://a.example/drop/8\",\"text\":\"trunc\n"   // URL first: passed over unparsed
            "{\"url\":\"http:\\/\\/a.example\\/drop\\/9\",\"text\":\"x\"}\n",  // escaped: parsed for its URL
            o);
  ASSERT_EQ(r.records.size(), 3u);
  EXPECT_EQ(r.records[0].url, "http://a.example/keep/1");
  EXPECT_EQ(r.records[1].url, "http://a.example/keep/3");  // unescaped, as the full parse gives it
  EXPECT_EQ(r.records[1].line, 3u);
  EXPECT_EQ(r.records[2].url, "http://a.example/keep/7");
  EXPECT_EQ(r.stats.passed_over, 4u);
  EXPECT_EQ(r.stats.records, 3u);
  ASSERT_EQ(r.bad.size(), 2u);
  EXPECT_EQ(r.bad[0].line, 5u);
  EXPECT_EQ(r.bad[1].line, 6u);
  EXPECT_THAT(asked, ::testing::Contains("http://a.example/keep/3"));
  EXPECT_THAT(asked, ::testing::Contains("http://a.example/drop/9"));  // unescaped
  EXPECT_THAT(SummarizeReader(r.stats), HasSubstr("4 passed over by URL"));
}

// The estimate counts a probe's records (parsed or passed over) and scales them by the file's size;
// a file that ends within the probe is counted exactly.
TEST(CrawlReader, EstimateRecordCountScalesTheProbeByTheFileSize) {
  test::TempDir dir;
  const std::string path = dir.File("crawl.jsonl");
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    for (int i = 0; i < 2000; ++i) {
      // Records of alternating lengths (70 and 130 bytes): the probe's mean is the file's.
      const std::string text(i % 2 == 0 ? 20 : 80, 'x');
      std::fprintf(f, "{\"url\":\"http://a.example/%04d\",\"text\":\"%s\"}\n", i, text.c_str());
    }
    std::fclose(f);
  }
  auto exact = EstimateRecordCount(path, {});
  ASSERT_TRUE(exact.ok()) << exact.status().ToString();
  EXPECT_EQ(*exact, 2000u);  // the whole file is within the default probe
  auto estimate = EstimateRecordCount(path, {}, /*probe_bytes=*/10000);
  ASSERT_TRUE(estimate.ok()) << estimate.status().ToString();
  EXPECT_NEAR(static_cast<double>(*estimate), 2000.0, 40.0);
  EXPECT_FALSE(EstimateRecordCount(dir.File("missing.jsonl"), {}).ok());
}

TEST(CrawlReader, OpenMissingFileIsAnIoError) {
  auto r = CrawlReader::Open("/nonexistent/crawl.jsonl", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_THAT(r.status().message(), HasSubstr("/nonexistent/crawl.jsonl"));
}

TEST(Url, AbsoluteHttpOnly) {
  EXPECT_TRUE(IsAbsoluteHttpUrl("http://a.example"));
  EXPECT_TRUE(IsAbsoluteHttpUrl("HTTPS://a.example/p?q=1#f"));
  EXPECT_FALSE(IsAbsoluteHttpUrl("http://"));
  EXPECT_FALSE(IsAbsoluteHttpUrl("http:///path"));
  EXPECT_FALSE(IsAbsoluteHttpUrl("mailto:a@b"));
  EXPECT_FALSE(IsAbsoluteHttpUrl("http://a b.example/"));
  EXPECT_FALSE(IsAbsoluteHttpUrl(""));
}

// A growing file: the reader reads no further than readable() allows, pauses there (Next false,
// paused), and goes on once more is readable.
TEST(CrawlReader, FollowsAGrowingFile) {
  test::TempDir dir;
  const std::string path = dir.File("log.jsonl");
  const std::string a = "{\"url\":\"http://a.example/1\",\"text\":\"one\"}\n";
  const std::string b = "{\"url\":\"http://a.example/2\",\"text\":\"two\"}\n";
  std::FILE* w = std::fopen(path.c_str(), "wb");
  ASSERT_NE(w, nullptr);
  std::fputs((a + b).c_str(), w);
  std::fflush(w);
  uint64_t limit = a.size();
  CrawlReaderOptions o;
  o.readable = [&] { return limit; };
  auto reader = CrawlReader::Open(path, o);
  ASSERT_TRUE(reader.ok());
  CrawlRecord r;
  ASSERT_TRUE((*reader)->Next(&r));
  EXPECT_EQ(r.url, "http://a.example/1");
  EXPECT_FALSE((*reader)->Next(&r));
  EXPECT_TRUE((*reader)->paused());
  limit += b.size();
  ASSERT_TRUE((*reader)->Next(&r));
  EXPECT_EQ(r.url, "http://a.example/2");
  EXPECT_EQ(r.end_offset, a.size() + b.size());
  // Written after the reader saw the end of the file: read once readable.
  std::fputs(a.c_str(), w);
  std::fclose(w);
  EXPECT_FALSE((*reader)->Next(&r));
  limit += a.size();
  ASSERT_TRUE((*reader)->Next(&r));
  EXPECT_EQ(r.url, "http://a.example/1");
  EXPECT_FALSE((*reader)->Next(&r));
  EXPECT_TRUE((*reader)->paused());
  EXPECT_TRUE((*reader)->status().ok());
}

}  // namespace
}  // namespace neardup
