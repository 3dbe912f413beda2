#include "document/warc_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <fstream>

#include "testing/temp_dir.h"

namespace neardup {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Http(const std::string& status, const std::string& headers, const std::string& body) {
  return "HTTP/1.1 " + status + "\r\n" + headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
         body;
}

std::string Html(const std::string& body, const std::string& type = "text/html; charset=utf-8") {
  return Http("200 OK", "Content-Type: " + type + "\r\n", body);
}

std::string Record(const std::string& type, const std::string& uri, const std::string& block,
                   const std::string& date = "2024-06-03T00:09:48Z") {
  std::string head = "WARC/1.0\r\nWARC-Type: " + type + "\r\n";
  if (!uri.empty()) head += "WARC-Target-URI: " + uri + "\r\n";
  head += "WARC-Date: " + date + "\r\nWARC-Record-ID: <urn:uuid:x>\r\n";
  if (type == "response" || type == "revisit") head += "Content-Type: application/http; msgtype=response\r\n";
  return head + "Content-Length: " + std::to_string(block.size()) + "\r\n\r\n" + block + "\r\n\r\n";
}

// One gzip member of `data`, as wget writes one per record.
std::string GzipMember(const std::string& data) {
  z_stream z;
  std::memset(&z, 0, sizeof z);
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

struct ReadWarc {
  std::vector<CrawlRecord> records;
  std::vector<BadLine> bad;
  CrawlReaderStats stats;
  Status status;
  ReadWarc(const test::TempDir& dir, const std::string& name, const std::string& bytes, CrawlReaderOptions o = {}) {
    const std::string path = dir.File(name);
    std::ofstream(path, std::ios::binary) << bytes;
    auto reader = CrawlReader::Open(path, o);
    EXPECT_TRUE(reader.ok()) << reader.status().ToString();
    (*reader)->set_on_bad_line([this](const BadLine& b) { bad.push_back(b); });
    CrawlRecord r;
    while ((*reader)->Next(&r)) records.push_back(r);
    status = (*reader)->status();
    stats = (*reader)->stats();
  }
};

TEST(WarcReader, ResponsesBecomeRecordsWithUrlDateAndHtml) {
  test::TempDir dir;
  const std::string a = Record("warcinfo", "", "software: test\r\n");
  const std::string b = Record("request", "http://a.example/", "GET / HTTP/1.1\r\n\r\n");
  const std::string c = Record("response", "http://a.example/", Html("<p>hello world</p>"));
  const std::string d = Record("response", "<http://b.example/x>", Html("<p>two</p>", "application/xhtml+xml"),
                               "2024-06-03T00:09:49Z");
  ReadWarc r(dir, "c.warc", a + b + c + d);
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(r.bad.empty());
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.records[0].url, "http://a.example/");
  EXPECT_TRUE(r.records[0].is_html);
  EXPECT_TRUE(r.records[0].has_content());
  EXPECT_EQ(r.records[0].body, "<p>hello world</p>");
  EXPECT_EQ(*r.records[0].fetched_at_ms, 1717373388000);
  EXPECT_EQ(r.records[0].line, 3u);  // the WARC record's number
  EXPECT_EQ(r.records[0].end_offset, a.size() + b.size() + c.size());
  EXPECT_EQ(r.records[1].url, "http://b.example/x");
  EXPECT_EQ(*r.records[1].fetched_at_ms, 1717373389000);
  EXPECT_EQ(r.records[1].end_offset, a.size() + b.size() + c.size() + d.size());
  EXPECT_EQ(r.stats.lines, 4u);
  EXPECT_EQ(r.stats.records, 2u);
  EXPECT_EQ(r.stats.warc_not_response, 2u);
  EXPECT_EQ(r.stats.bytes, a.size() + b.size() + c.size() + d.size());
  EXPECT_THAT(SummarizeReader(r.stats), HasSubstr("2 records from 4 WARC records"));
}

TEST(WarcReader, RedirectsGonePagesAndSkippedResponsesAreCounted) {
  test::TempDir dir;
  std::string w;
  w += Record("response", "http://a.example/docs/x/index.html",
              Http("301 Moved Permanently", "Location: ../y/./page.html\r\n", ""));
  w += Record("response", "http://a.example/old", Http("404 Not Found", "Content-Type: text/html\r\n", "<p>no</p>"));
  w += Record("response", "http://a.example/gone", Http("410 Gone", "", ""));
  w += Record("response", "http://a.example/err", Http("500 Internal Server Error", "", ""));
  w += Record("response", "http://a.example/nm", Http("304 Not Modified", "", ""));
  w += Record("response", "http://a.example/img.png", Html("\x89PNG....", "image/png"));
  w += Record("response", "http://a.example/robots.txt", Html("User-agent: *", "text/plain"));
  w += Record("revisit", "http://a.example/again", Http("200 OK", "", ""));
  ReadWarc r(dir, "c.warc", w);
  EXPECT_TRUE(r.bad.empty());
  ASSERT_EQ(r.records.size(), 3u);
  EXPECT_EQ(r.records[0].redirect_to, "http://a.example/docs/y/page.html");
  EXPECT_TRUE(r.records[1].gone);
  EXPECT_TRUE(r.records[1].body.empty());
  EXPECT_TRUE(r.records[2].gone);
  EXPECT_EQ(r.stats.warc_other_status, 2u);
  EXPECT_EQ(r.stats.warc_non_html, 2u);
  EXPECT_EQ(r.stats.warc_revisits, 1u);
  EXPECT_THAT(SummarizeReader(r.stats), HasSubstr("1 revisits, 2 not HTML, 2 other HTTP status"));
}

TEST(WarcReader, TruncatedRecordIsReportedWithItsOffsetAndEndsTheInput) {
  test::TempDir dir;
  const std::string a = Record("response", "http://a.example/", Html("<p>one</p>"));
  const std::string b = Record("response", "http://b.example/", Html("<p>two two two two</p>"));
  ReadWarc r(dir, "c.warc", a + b.substr(0, b.size() - 20));
  EXPECT_TRUE(r.status.ok());
  ASSERT_EQ(r.records.size(), 1u);
  ASSERT_EQ(r.bad.size(), 1u);
  EXPECT_EQ(r.bad[0].line, 2u);
  EXPECT_THAT(r.bad[0].reason, StartsWith("record at byte " + std::to_string(a.size()) + ": truncated"));
  EXPECT_THAT(r.bad[0].reason, HasSubstr("http://b.example/"));
  EXPECT_EQ(r.stats.bad_lines, 1u);

  // Cut inside the header.
  ReadWarc h(dir, "h.warc", a + b.substr(0, 30));
  ASSERT_EQ(h.records.size(), 1u);
  ASSERT_EQ(h.bad.size(), 1u);
  EXPECT_THAT(h.bad[0].reason, HasSubstr("truncated: the file ends inside the record's header"));
}

TEST(WarcReader, CorruptRecordsAreReportedWithOffsetsAndReadingGoesOn) {
  test::TempDir dir;
  const std::string a = Record("response", "http://a.example/", Html("<p>one</p>"));
  const std::string junk = "this is not a WARC record\r\n\r\n";
  const std::string c = Record("response", "http://c.example/", Html("<p>three</p>"));
  // A Content-Length one byte too long: the block is not followed by CRLF CRLF.
  std::string d = Record("response", "http://d.example/", Html("<p>four</p>"));
  const std::string len = "Content-Length: " + std::to_string(Html("<p>four</p>").size());
  d.replace(d.find(len), len.size(), "Content-Length: " + std::to_string(Html("<p>four</p>").size() + 1));
  std::string e = Record("response", "http://e.example/", Html("<p>five</p>"));
  e.replace(e.find("Content-Length: "), 16, "Content-Length: x");
  const std::string f = Record("response", "http://f.example/", Html("<p>six</p>"));
  const std::string g = Record("response", "http://g.example/", "garbage, not HTTP");
  const std::string h = Record("response", "ftp://h.example/", Html("<p>eight</p>"));
  const std::string i = Record("response", "http://i.example/", Html("<p>nine</p>"));
  ReadWarc r(dir, "c.warc", a + junk + c + d + e + f + g + h + i);
  EXPECT_TRUE(r.status.ok());
  std::vector<std::string> urls;
  for (const auto& rec : r.records) urls.push_back(rec.url);
  EXPECT_THAT(urls, ::testing::ElementsAre("http://a.example/", "http://c.example/", "http://f.example/",
                                           "http://i.example/"));
  ASSERT_EQ(r.bad.size(), 5u);
  EXPECT_EQ(r.bad[0].reason, "record at byte " + std::to_string(a.size()) +
                                 ": corrupt: no WARC/ version line where a record should start");
  const size_t at_d = a.size() + junk.size() + c.size();
  EXPECT_THAT(r.bad[1].reason, StartsWith("record at byte " + std::to_string(at_d) + ": corrupt: the block is not "
                                          "followed by CRLF CRLF"));
  EXPECT_THAT(r.bad[2].reason, HasSubstr("Content-Length is not a number"));
  EXPECT_THAT(r.bad[3].reason, HasSubstr("not an HTTP response"));
  EXPECT_THAT(r.bad[4].reason, HasSubstr("without an absolute http(s) WARC-Target-URI"));
}

TEST(WarcReader, BlockOverTheLimitIsSkippedWithoutHoldingIt) {
  test::TempDir dir;
  const std::string big = Record("response", "http://big.example/", Html("<p>" + std::string(5000, 'x') + "</p>"));
  const std::string ok = Record("response", "http://ok.example/", Html("<p>ok</p>"));
  CrawlReaderOptions o;
  o.max_line_bytes = 1000;
  ReadWarc r(dir, "c.warc", big + ok, o);
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].url, "http://ok.example/");
  ASSERT_EQ(r.bad.size(), 1u);
  EXPECT_THAT(r.bad[0].reason, HasSubstr("longer than max_line_bytes (1000)"));
}

TEST(WarcReader, ChunkedGzipEncodedAndLatin1BodiesAreDecoded) {
  test::TempDir dir;
  std::string w;
  w += Record("response", "http://a.example/",
              "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n"
              "5\r\n<p>he\r\n7;ext=1\r\nllo</p>\r\n0\r\n\r\n");
  const std::string gz = GzipMember("<p>compressed</p>");
  w += Record("response", "http://b.example/", Http("200 OK", "Content-Type: text/html\r\nContent-Encoding: gzip\r\n", gz));
  w += Record("response", "http://c.example/", Html("<p>caf\xe9</p>", "text/html; charset=ISO-8859-1"));
  w += Record("response", "http://d.example/", Html("<p>bad \xff byte</p>"));
  w += Record("response", "http://e.example/",
              "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
  ReadWarc r(dir, "c.warc", w);
  ASSERT_EQ(r.records.size(), 4u);
  EXPECT_EQ(r.records[0].body, "<p>hello</p>");
  EXPECT_EQ(r.records[1].body, "<p>compressed</p>");
  EXPECT_EQ(r.records[2].body, "<p>caf\xc3\xa9</p>");
  EXPECT_EQ(r.records[3].body, "<p>bad \xef\xbf\xbd byte</p>");
  EXPECT_EQ(r.stats.utf8_repaired, 1u);
  ASSERT_EQ(r.bad.size(), 1u);
  EXPECT_THAT(r.bad[0].reason, HasSubstr("malformed chunked body"));
}

TEST(WarcReader, GzipOneMemberPerRecord) {
  test::TempDir dir;
  const std::string a = GzipMember(Record("warcinfo", "", "software: test\r\n"));
  const std::string b = GzipMember(Record("response", "http://a.example/", Html("<p>one</p>")));
  const std::string c = GzipMember(Record("response", "http://b.example/", Html("<p>two</p>")));
  ReadWarc r(dir, "c.warc.gz", a + b + c);
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(r.bad.empty());
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.records[0].body, "<p>one</p>");
  EXPECT_EQ(r.records[0].end_offset, a.size() + b.size());  // where its gzip member ends in the file
  EXPECT_EQ(r.records[1].end_offset, a.size() + b.size() + c.size());
  EXPECT_EQ(r.stats.bytes, a.size() + b.size() + c.size());

  // One member for the whole file reads the same.
  ReadWarc one(dir, "one.warc.gz",
               GzipMember(Record("response", "http://a.example/", Html("<p>one</p>")) +
                          Record("response", "http://b.example/", Html("<p>two</p>"))));
  ASSERT_EQ(one.records.size(), 2u);
  EXPECT_EQ(one.records[1].body, "<p>two</p>");
}

TEST(WarcReader, CorruptGzipMemberIsReportedAndTheNextMemberRead) {
  test::TempDir dir;
  const std::string a = GzipMember(Record("response", "http://a.example/", Html("<p>one</p>")));
  std::string b = GzipMember(Record("response", "http://b.example/", Html("<p>" + std::string(300, 'b') + "</p>")));
  for (size_t i = 12; i < b.size() - 10; i += 3) b[i] = static_cast<char>(b[i] ^ 0x5a);
  const std::string c = GzipMember(Record("response", "http://c.example/", Html("<p>three</p>")));
  ReadWarc r(dir, "c.warc.gz", a + b + c);
  ASSERT_TRUE(r.status.ok());
  std::vector<std::string> urls;
  for (const auto& rec : r.records) urls.push_back(rec.url);
  EXPECT_THAT(urls, ::testing::ElementsAre("http://a.example/", "http://c.example/"));
  // Whatever the member inflated to before failing is reported too, as a record that does not
  // start with WARC/.
  std::vector<std::string> reasons;
  for (const auto& bad : r.bad) reasons.push_back(bad.reason);
  EXPECT_THAT(reasons, ::testing::Contains(::testing::AllOf(
                           HasSubstr("gzip member at byte " + std::to_string(a.size()) + " does not inflate"),
                           HasSubstr("went on at the gzip member at byte " + std::to_string(a.size() + b.size())))));
}

TEST(WarcReader, TruncatedGzipReportsTheRecord) {
  test::TempDir dir;
  const std::string a = GzipMember(Record("response", "http://a.example/", Html("<p>one</p>")));
  const std::string b = GzipMember(Record("response", "http://b.example/", Html("<p>" + std::string(2000, 'q') + "</p>")));
  ReadWarc r(dir, "c.warc.gz", a + b.substr(0, b.size() / 2));
  ASSERT_TRUE(r.status.ok());
  ASSERT_EQ(r.records.size(), 1u);
  ASSERT_EQ(r.bad.size(), 1u);
  EXPECT_THAT(r.bad[0].reason, HasSubstr("(gzip member at byte " + std::to_string(a.size()) + "): truncated"));
}

TEST(WarcReader, OpenRefusesFollowingAndMissingFilesAndSamplesByUrl) {
  test::TempDir dir;
  EXPECT_FALSE(CrawlReader::Open(dir.File("none.warc"), {}).ok());
  std::ofstream(dir.File("x.warc")) << "";
  CrawlReaderOptions follow;
  follow.readable = [] { return uint64_t{0}; };
  auto r = CrawlReader::Open(dir.File("x.warc"), follow);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().ToString(), HasSubstr("cannot be followed"));
  CrawlReaderOptions sample;
  sample.want_url = [](std::string_view url) { return url.find("keep") != std::string_view::npos; };
  ReadWarc s(dir, "s.warc",
             Record("response", "http://a.example/keep", Html("<p>1</p>")) +
                 Record("response", "http://a.example/drop", Html("<p>2</p>")),
             sample);
  ASSERT_EQ(s.records.size(), 1u);
  EXPECT_EQ(s.records[0].url, "http://a.example/keep");
  EXPECT_EQ(s.stats.passed_over, 1u);
  EXPECT_TRUE(IsWarcPath("a/b.warc.gz"));
  EXPECT_FALSE(IsWarcPath("a/b.jsonl"));
}

TEST(ResolveUrl, Rfc3986Examples) {
  const std::string base = "http://a/b/c/d;p?q";
  EXPECT_EQ(ResolveUrl(base, "g"), "http://a/b/c/g");
  EXPECT_EQ(ResolveUrl(base, "./g"), "http://a/b/c/g");
  EXPECT_EQ(ResolveUrl(base, "g/"), "http://a/b/c/g/");
  EXPECT_EQ(ResolveUrl(base, "/g"), "http://a/g");
  EXPECT_EQ(ResolveUrl(base, "//g"), "http://g/");
  EXPECT_EQ(ResolveUrl(base, "?y"), "http://a/b/c/d;p?y");
  EXPECT_EQ(ResolveUrl(base, "g?y"), "http://a/b/c/g?y");
  EXPECT_EQ(ResolveUrl(base, ""), "http://a/b/c/d;p?q");
  EXPECT_EQ(ResolveUrl(base, ".."), "http://a/b/");
  EXPECT_EQ(ResolveUrl(base, "../g"), "http://a/b/g");
  EXPECT_EQ(ResolveUrl(base, "../../g"), "http://a/g");
  EXPECT_EQ(ResolveUrl(base, "../../../g"), "http://a/g");
  EXPECT_EQ(ResolveUrl(base, "https://x.example/p/../q"), "https://x.example/q");
  EXPECT_EQ(ResolveUrl("http://h:8080", "docs/"), "http://h:8080/docs/");
}

}  // namespace
}  // namespace neardup
