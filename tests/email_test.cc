// End-to-end test of the email subcommands: `neardup email induce`, then `email annotate` on the
// store induce kept, then `email eval`, on a generated file of templated and personal emails with
// bad lines among them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "common/json_write.h"
#include "email/templates/email_test_util.h"
#include "tests/binary_test.h"

namespace neardup {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// An email as a JSONL line, with its evaluation label.
std::string Line(const email::EmailRecord& r, const std::string& label) {
  std::string s = email::test::JsonLine(r);
  s.resize(s.size() - 2);  // without its closing "}\n"
  s += ",\"sent_at\":\"2024-06-03T" + std::to_string(10 + (r.sent_at_ms.value_or(0) / 3'600'000) % 10) + ":00:00Z\"";
  s += ",\"label\":";
  AppendJsonString(&s, label);
  return s + "}\n";
}

class EmailCommandsTest : public BinaryTest {
 protected:
  // id -> template (nullopt for none) from lines of {"id": ..., "template": ...}.
  static std::map<std::string, std::optional<std::string>> Assignments(const std::string& text) {
    std::map<std::string, std::optional<std::string>> out;
    simdjson::dom::parser parser;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      simdjson::dom::element e = parser.parse(line);
      std::string_view t;
      const std::string id{std::string_view(e["id"])};
      if (e["template"].get_string().get(t) == simdjson::SUCCESS) {
        out[id] = std::string(t);
      } else {
        out[id] = std::nullopt;
      }
    }
    return out;
  }

  // 3 templates x 30 emails to 30 recipients each, 8 personal emails, and on lines 5 and 9 a line
  // without a recipient and a line that is not JSON.
  void WriteEmails() {
    const auto stream = email::test::Stream(30, 8);
    std::string text;
    int line = 0;
    for (const auto& r : stream) {
      const std::string label = r.id[0] == 't' ? r.id.substr(0, 2) : "none";
      text += Line(r, label);
      labels_[r.id] = label;
      if (++line == 4) {
        text += "{\"id\":\"x1\",\"sender\":\"a@b.example\",\"subject\":\"Secret subject\",\"html\":\"<p>x</p>\"}\n";
        ++line;
      } else if (line == 8) {
        text += "not json at all\n";
        ++line;
      }
    }
    Write("emails.jsonl", text);
  }

  std::map<std::string, std::string> labels_;
};

TEST_F(EmailCommandsTest, InduceAnnotateEvalAndBadLines) {
  WriteEmails();
  // Both stages on the reading thread: a deterministic replay, so the counts below are exact.
  Write("email.textproto", "email { cluster_threads: 0 formation_threads: 0 }\n");
  const Outcome induce = Neardup("email induce --input " + Path("emails.jsonl") + " --config " + Path("email.textproto") +
                                 " --k 10 --out " + Path("templates.jsonl") +
                                 " --assignments " + Path("assignments.jsonl") + " --store " + Path("store"));
  ASSERT_EQ(induce.code, 0) << induce.err;
  // Bad lines are named with their line number and the field, never their content.
  EXPECT_THAT(induce.err, HasSubstr("emails.jsonl:5:"));
  EXPECT_THAT(induce.err, HasSubstr("recipient"));
  EXPECT_THAT(induce.err, HasSubstr("emails.jsonl:9:"));
  EXPECT_THAT(induce.err, Not(HasSubstr("Secret subject")));
  EXPECT_THAT(induce.out, HasSubstr("3 templates"));

  const auto assigned = Assignments(Read(Path("assignments.jsonl")));
  ASSERT_EQ(assigned.size(), labels_.size());  // every good line, no bad one
  std::map<std::string, std::set<std::string>> templates_of;  // label -> templates
  for (const auto& [id, label] : labels_) {
    const auto& t = assigned.at(id);
    if (label == "none") {
      EXPECT_FALSE(t.has_value()) << id;  // personal mail stays unclustered
    } else {
      ASSERT_TRUE(t.has_value()) << id;
      templates_of[label].insert(*t);
    }
  }
  ASSERT_EQ(templates_of.size(), 3u);
  std::set<std::string> all;
  for (const auto& [label, ts] : templates_of) {
    EXPECT_EQ(ts.size(), 1u) << label;
    all.insert(ts.begin(), ts.end());
  }
  EXPECT_EQ(all.size(), 3u);  // templates sharing a layout and a sender stay apart
  // templates.jsonl: the three templates, each with k recipients.
  const std::string templates = Read(Path("templates.jsonl"));
  int n = 0;
  for (const std::string& id : all) {
    EXPECT_THAT(templates, HasSubstr(id));
  }
  for (char c : templates) n += c == '\n';
  EXPECT_EQ(n, 3);
  EXPECT_THAT(templates, Not(HasSubstr("@mail.example")));  // no recipient address is exported

  // annotate on the kept store assigns every email as induce did.
  const Outcome annotate = Neardup("email annotate --input " + Path("emails.jsonl") + " --store " + Path("store"));
  ASSERT_EQ(annotate.code, 0) << annotate.err;
  EXPECT_THAT(annotate.err, HasSubstr("emails.jsonl:5:"));
  const auto annotated = Assignments(annotate.out);
  EXPECT_EQ(annotated, assigned);

  // eval scores both fingerprint modes on the labels.
  const Outcome eval = Neardup("email eval --input " + Path("emails.jsonl") + " --k 10");
  ASSERT_EQ(eval.code, 0) << eval.err;
  std::istringstream rows(eval.out);
  std::string row;
  bool verified = false;
  while (std::getline(rows, row)) {
    if (row.rfind("verified", 0) != 0) continue;
    verified = true;
    std::istringstream f(row);
    std::string mode;
    int k = 0, count = 0, personal = -1;
    double purity = 0, coverage = 0, fragmentation = 0;
    f >> mode >> k >> count >> purity >> coverage >> fragmentation >> personal;
    EXPECT_EQ(k, 10);
    EXPECT_EQ(count, 3);
    EXPECT_DOUBLE_EQ(purity, 1.0);
    EXPECT_DOUBLE_EQ(coverage, 1.0);
    EXPECT_DOUBLE_EQ(fragmentation, 1.0);
    EXPECT_EQ(personal, 0);
  }
  EXPECT_TRUE(verified) << eval.out;
  // The discovery delay, online beside the daily batch over a sample.
  EXPECT_THAT(eval.out, HasSubstr("3 of 3"));
  EXPECT_THAT(eval.out, HasSubstr("batch, daily, 0.5% sample"));
}

TEST_F(EmailCommandsTest, MissingInputAndStoreAreNamed) {
  const Outcome induce = Neardup("email induce --input " + Path("absent.jsonl") + " --out " + Path("t.jsonl") +
                                 " --assignments " + Path("a.jsonl"));
  EXPECT_NE(induce.code, 0);
  EXPECT_THAT(induce.err, HasSubstr("absent.jsonl"));
  Write("one.jsonl", "{\"id\":\"1\",\"sender\":\"a@b.example\",\"recipient\":\"c@d.example\",\"subject\":\"s\",\"html\":\"x\"}\n");
  const Outcome annotate = Neardup("email annotate --input " + Path("one.jsonl") + " --store " + Path("nostore"));
  EXPECT_NE(annotate.code, 0);
  EXPECT_THAT(annotate.err, HasSubstr("nostore"));
}

}  // namespace
}  // namespace neardup
