#include "email/templates/template_former.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "email/templates/email_test_util.h"

namespace neardup::email {
namespace {

std::vector<pb::StoredEmail> Stored(const std::vector<EmailRecord>& records, FingerprintMode mode) {
  auto x = FeatureExtractor::Create(5);
  EXPECT_TRUE(x.ok());
  std::vector<pb::StoredEmail> out;
  for (const auto& r : records) {
    EmailFeatures f;
    EXPECT_TRUE((*x)->Extract(r, &f).ok());
    out.push_back(ToStored(r, f, ClusterKeys(mode, f)));
  }
  return out;
}

TEST(SplitRow, SeparatesTemplatesThatShareALayout) {
  std::vector<EmailRecord> records;
  for (int i = 0; i < 15; ++i) {
    for (int t = 0; t < 3; ++t) records.push_back(test::TemplateEmail(t, i, i, 1000 * i + t));
  }
  const auto emails = Stored(records, FingerprintMode::kVerified);
  FormationOptions o;
  o.k = 10;
  const auto variants = SplitRow(emails, o);
  ASSERT_EQ(variants.size(), 3u);
  for (const Variant& v : variants) {
    std::set<char> tpl;
    for (size_t m : v.members) tpl.insert(emails[m].id()[1]);
    EXPECT_EQ(tpl.size(), 1u) << "a variant mixes templates";
    EXPECT_EQ(v.members.size(), 15u);
    EXPECT_EQ(v.recipients, 15u);
    EXPECT_GE(v.core.size(), o.min_fixed_shingles);
  }
  // Each email matches its own template's core.
  for (size_t i = 0; i < emails.size(); ++i) {
    std::vector<pb::EmailTemplate> ts;
    for (size_t v = 0; v < variants.size(); ++v) {
      pb::EmailTemplate t;
      t.set_id(v);
      t.mutable_core()->Assign(variants[v].core.begin(), variants[v].core.end());
      ts.push_back(t);
    }
    std::vector<const pb::EmailTemplate*> c;
    for (auto& t : ts) c.push_back(&t);
    const auto& sh = emails[i].shingles();
    const pb::EmailTemplate* m = MatchTemplate(c, std::span<const uint64_t>(sh.data(), sh.size()), o);
    ASSERT_NE(m, nullptr);
    EXPECT_NE(std::find(variants[m->id()].members.begin(), variants[m->id()].members.end(), i), variants[m->id()].members.end());
  }
}

TEST(SplitRow, NothingUnderKRecipients) {
  std::vector<EmailRecord> records;
  for (int i = 0; i < 30; ++i) records.push_back(test::TemplateEmail(0, i, i % 9, i));  // 9 recipients
  FormationOptions o;
  o.k = 10;
  EXPECT_TRUE(SplitRow(Stored(records, FingerprintMode::kVerified), o).empty());
  o.mode = FingerprintMode::kPaper;
  EXPECT_TRUE(SplitRow(Stored(records, FingerprintMode::kPaper), o).empty());
  o.k = 9;
  EXPECT_EQ(SplitRow(Stored(records, FingerprintMode::kPaper), o).size(), 1u);
}

TEST(SplitRow, PersonalMailSharingOnlyASignatureIsNoTemplate) {
  std::vector<EmailRecord> records;
  static const char* kWords[] = {"keys", "dinner", "train", "garden", "movie", "lunch", "notes", "beach", "paint",
                                 "bike", "concert", "recipe", "ticket", "camera", "market", "museum", "park"};
  for (int i = 0; i < 40; ++i) {
    EmailRecord r = test::PersonalEmail(i, i);
    r.sender = "me@home.example";
    // A body of its own (no five words in a row shared by ten of them), one signature for all.
    std::string body;
    for (int w = 0; w < 12; ++w) body += std::string(kWords[(i * 7 + w * (i % 5 + 1)) % 17]) + " ";
    r.html = "<div>Hey,</div><div>" + body + "</div><div>Sent from my phone</div>";
    records.push_back(r);
  }
  FormationOptions o;
  o.k = 10;
  EXPECT_TRUE(SplitRow(Stored(records, FingerprintMode::kVerified), o).empty());
}

TEST(SubjectPattern, StarsTheWordsNotCommonToAll) {
  pb::StoredEmail a, b;
  a.set_subject("New comment on Website refresh");
  b.set_subject("New comment on Brand guide");
  std::vector<const pb::StoredEmail*> m = {&a, &b};
  EXPECT_EQ(SubjectPattern(m), "New comment on *");
  a.set_subject("Ann, your account is ready");
  b.set_subject("Bob, your account is ready");
  EXPECT_EQ(SubjectPattern(m), "* your account is ready");
}

}  // namespace
}  // namespace neardup::email
