#include "email/templates/udca.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace neardup::email {
namespace {

using ::testing::HasSubstr;

pb::StoredEmail Email(std::vector<std::pair<std::string, std::string>> blocks, const std::string& subject = "") {
  pb::StoredEmail e;
  e.set_subject(subject);
  for (auto& [x, t] : blocks) {
    auto* b = e.add_blocks();
    b->set_xpath(x);
    b->set_text(t);
  }
  return e;
}

std::unique_ptr<Udca> Make(const std::string& name, double threshold = 0.5) {
  pb::EmailConfig c;
  c.add_udcas(name);
  c.set_vertical_threshold(threshold);
  auto u = UdcaRegistry::Global().Create(c);
  EXPECT_TRUE(u.ok()) << u.status().message();
  return std::move((*u)[0]);
}

TEST(Udca, RegistryCreatesByNameAndNamesUnknownOnes) {
  pb::EmailConfig c;
  c.add_udcas("vertical");
  c.add_udcas("nope");
  auto u = UdcaRegistry::Global().Create(c);
  ASSERT_FALSE(u.ok());
  EXPECT_THAT(u.status().message(), HasSubstr("no cluster aggregator named \"nope\""));
  EXPECT_THAT(u.status().message(), HasSubstr("date_format, field_extraction, fixed_text, vertical"));
  EXPECT_FALSE(UdcaRegistry::Global().Register("vertical", nullptr).ok());
}

TEST(Udca, PluginRegisteredByNameIsCreatedFromConfig) {
  struct Count : Udca {
    std::string_view name() const override { return "count"; }
    std::string Aggregate(std::span<const pb::StoredEmail* const> e) const override { return std::to_string(e.size()); }
  };
  ASSERT_TRUE(UdcaRegistry::Global()
                  .Register("count", [](const pb::EmailConfig&) -> StatusOr<std::unique_ptr<Udca>> {
                    return std::unique_ptr<Udca>(new Count);
                  })
                  .ok());
  auto u = Make("count");
  pb::StoredEmail a, b;
  std::vector<const pb::StoredEmail*> emails = {&a, &b};
  EXPECT_EQ(u->Aggregate(emails), "2");
}

TEST(Udca, FixedTextKeepsBlocksCommonToEveryEmail) {
  auto a = Email({{"/p[0]", "Hello"}, {"/p[1]", "Ann"}, {"/p[2]", "Footer"}});
  auto b = Email({{"/p[0]", "Hello"}, {"/p[1]", "Bob"}, {"/p[2]", "Footer"}});
  std::vector<const pb::StoredEmail*> emails = {&a, &b};
  EXPECT_EQ(Make("fixed_text")->Aggregate(emails), R"(["Hello","Footer"])");
}

TEST(Udca, DateFormatInfersDayFirstAndResolvesAmbiguousDates) {
  auto a = Email({{"/p", "Paid on 25/12/2023"}});
  auto b = Email({{"/p", "Paid on 13.01.24"}});
  auto c = Email({{"/p", "Paid on 1/2/2019"}});
  std::vector<const pb::StoredEmail*> emails = {&a, &b, &c};
  auto u = Make("date_format");
  const std::string ann = u->Aggregate(emails);
  EXPECT_THAT(ann, HasSubstr("\"order\":\"D/M\""));
  EXPECT_EQ(u->Apply(ann, c), R"(["2019-02-01"])");
  auto us = Email({{"/p", "Paid on 12/25/2023"}});
  std::vector<const pb::StoredEmail*> us_emails = {&us, &c};
  const std::string us_ann = u->Aggregate(us_emails);
  EXPECT_THAT(us_ann, HasSubstr("\"order\":\"M/D\""));
  EXPECT_EQ(u->Apply(us_ann, c), R"(["2019-01-02"])");
  EXPECT_EQ(u->Apply(R"({"order":"unknown"})", c), "");
  EXPECT_TRUE(FindNumericDates("version 1.2.3 and 123/4/2020").empty());
}

TEST(Udca, VerticalTakesTheMajorityAboveTheThreshold) {
  auto receipt = Email({{"/p", "Thanks for your purchase. Your order total was paid."}}, "Your receipt");
  auto reset = Email({{"/p", "Reset your password for your account"}}, "Password reset");
  auto none = Email({{"/p", "See you on Saturday"}});
  EXPECT_EQ(ClassifyVertical(receipt), "receipt");
  EXPECT_EQ(ClassifyVertical(reset), "password_reset");
  EXPECT_EQ(ClassifyVertical(none), "");
  std::vector<const pb::StoredEmail*> mostly = {&receipt, &receipt, &none};
  auto u = Make("vertical", 0.6);
  const std::string ann = u->Aggregate(mostly);
  EXPECT_THAT(ann, HasSubstr("\"label\":\"receipt\""));
  EXPECT_EQ(u->Apply(ann, none), "\"receipt\"");
  std::vector<const pb::StoredEmail*> split = {&receipt, &reset, &none};
  EXPECT_THAT(u->Aggregate(split), HasSubstr("\"label\":null"));
}

TEST(Udca, FieldExtractionPicksTheXPathWithTheBestAverageScore) {
  auto a = Email({{"/t/p[0]", "Hello Ann"}, {"/t/p[1]", "$ 12.50"}, {"/t/p[2]", "Order R-22448"}, {"/t/p[3]", "on 3/4/2024"}});
  auto b = Email({{"/t/p[0]", "Hello Bob"}, {"/t/p[1]", "$ 7.25"}, {"/t/p[2]", "Order R-10001"}, {"/t/p[3]", "on 5/6/2024"}});
  std::vector<const pb::StoredEmail*> emails = {&a, &b};
  auto u = Make("field_extraction");
  const std::string ann = u->Aggregate(emails);
  EXPECT_THAT(ann, HasSubstr(R"("price":{"xpath":"/t/p[1]")"));
  EXPECT_THAT(ann, HasSubstr(R"("order_number":{"xpath":"/t/p[2]")"));
  EXPECT_THAT(ann, HasSubstr(R"("date":{"xpath":"/t/p[3]")"));
  auto c = Email({{"/t/p[0]", "Hello Cy"}, {"/t/p[1]", "$ 99.00"}, {"/t/p[2]", "Order R-5"}});
  const std::string got = u->Apply(ann, c);
  EXPECT_THAT(got, HasSubstr(R"("price":"$ 99.00")"));
  EXPECT_THAT(got, HasSubstr(R"("order_number":"Order R-5")"));
}

}  // namespace
}  // namespace neardup::email
