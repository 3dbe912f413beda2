#include "email/templates/email_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "testing/temp_dir.h"

namespace neardup::email {
namespace {

using ::testing::HasSubstr;

TEST(EmailRecord, ParsesEveryField) {
  EmailRecord r;
  ASSERT_TRUE(ParseEmailRecord(R"({"id":"e1","sender":"a@b.example","recipient":"c@d.example","subject":"Hi",)"
                               R"("sent_at":"2024-06-03T00:09:48Z","html":"<p>x</p>","label":"ignored"})",
                               &r)
                  .ok());
  EXPECT_EQ(r.id, "e1");
  EXPECT_EQ(r.sender, "a@b.example");
  EXPECT_EQ(r.recipient, "c@d.example");
  EXPECT_EQ(r.subject, "Hi");
  EXPECT_EQ(r.html, "<p>x</p>");
  ASSERT_TRUE(r.sent_at_ms.has_value());
  EXPECT_EQ(*r.sent_at_ms, 1717373388000);
}

TEST(EmailRecord, SentAtIsOptionalAndOtherFieldsAreRequired) {
  EmailRecord r;
  EXPECT_TRUE(ParseEmailRecord(R"({"id":"e","sender":"a","recipient":"b","subject":"","html":""})", &r).ok());
  EXPECT_FALSE(r.sent_at_ms.has_value());
  Status s = ParseEmailRecord(R"({"id":"e","recipient":"b","subject":"","html":""})", &r);
  EXPECT_EQ(s.message(), "missing required field 'sender'");
  s = ParseEmailRecord(R"({"id":"e","sender":"a","recipient":"b","subject":3,"html":""})", &r);
  EXPECT_EQ(s.message(), "field 'subject' must be a string");
  s = ParseEmailRecord(R"({"id":"e","sender":"a","recipient":"b","subject":"","html":"","sent_at":"yesterday"})", &r);
  EXPECT_EQ(s.message(), "field 'sent_at' is not an RFC 3339 time");
  s = ParseEmailRecord(R"({"id":"","sender":"a","recipient":"b","subject":"","html":""})", &r);
  EXPECT_EQ(s.message(), "field 'id' must not be empty");
  EXPECT_THAT(ParseEmailRecord("not json", &r).message(), HasSubstr("not JSON"));
}

TEST(EmailReader, ReportsBadLinesWithNumbersAndSkipsThem) {
  neardup::test::TempDir dir;
  const std::string path = dir.File("e.jsonl");
  {
    std::ofstream out(path);
    out << R"({"id":"1","sender":"a","recipient":"b","subject":"secret subject","html":"<p>x</p>"})" << "\n";
    out << R"({"id":"2","sender":"a","recipient":"b","subject":"secret subject"})" << "\n";
    out << "\n";
    out << "{broken\n";
    out << R"({"id":"3","sender":"a","recipient":"b","subject":"s","html":")" << std::string(3000, 'x') << "\"}\n";
    out << R"({"id":"4","sender":"a","recipient":"b","subject":"s","html":"y"})";  // no final newline
  }
  EmailReaderOptions o;
  o.max_line_bytes = 2048;
  auto reader = EmailReader::Open(path, o);
  ASSERT_TRUE(reader.ok());
  std::vector<EmailBadLine> bad;
  (*reader)->set_on_bad_line([&](const EmailBadLine& b) { bad.push_back(b); });
  std::vector<std::string> ids;
  EmailRecord r;
  while ((*reader)->Next(&r)) ids.push_back(r.id + "@" + std::to_string(r.line));
  ASSERT_TRUE((*reader)->status().ok());
  EXPECT_THAT(ids, ::testing::ElementsAre("1@1", "4@6"));
  ASSERT_EQ(bad.size(), 3u);
  EXPECT_EQ(bad[0].line, 2u);
  EXPECT_EQ(bad[0].reason, "missing required field 'html'");
  EXPECT_EQ(bad[1].line, 4u);
  EXPECT_EQ(bad[2].line, 5u);
  EXPECT_EQ(bad[2].reason, "line longer than 2048 bytes");
  for (const auto& b : bad) EXPECT_EQ(b.reason.find("secret"), std::string::npos);
  EXPECT_EQ((*reader)->Summary(), "2 emails from 6 lines, 3 bad lines skipped");
}

TEST(EmailReader, MissingFileNamesThePath) {
  auto reader = EmailReader::Open("/nonexistent/e.jsonl", {});
  ASSERT_FALSE(reader.ok());
  EXPECT_THAT(reader.status().message(), HasSubstr("/nonexistent/e.jsonl"));
}

}  // namespace
}  // namespace neardup::email
