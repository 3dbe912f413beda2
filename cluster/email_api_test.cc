// The email endpoints on a loopback HTTP server: ingest, annotate and template lookups, the
// bearer token, bad lines named by number, and the snapshot refreshed in the background.
#include "cluster/email_api.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "cluster/http_client.h"
#include "common/config.h"
#include "email/email_test_util.h"
#include "testing/temp_dir.h"

namespace neardup::cluster {
namespace {

namespace et = email::test;

class EmailApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EmailApiOptions o;
    o.config = DefaultConfig().email();
    o.config.set_k(10);
    o.config.set_snapshot_refresh_ms(50);
    o.store = dir_.File("email");
    o.bearer_token = "s3cret";
    // Both clustering stages on the request's thread: a deterministic replay, so the templates
    // counted below are exact. With stage threads a row may be formed later than the email that
    // made it eligible; a row that then holds a few emails of each of the sender's three templates
    // of one layout, none yet at k recipients, forms their shared layout as a template of its own
    // (email/README.md, "Online").
    o.config.set_cluster_threads(0);
    o.config.set_formation_threads(0);
    o.work_threads = 2;
    auto api = EmailApi::Open(o);
    ASSERT_TRUE(api.ok()) << api.status().ToString();
    api_ = std::move(*api);
    auto server = HttpServer::Start({}, [this](HttpRequest& r) { return api_->Handle(r); });
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    auto client = HttpClient::Create("http://127.0.0.1:" + std::to_string(server_->port()));
    ASSERT_TRUE(client.ok());
    client_ = std::move(*client);
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (api_) {
      EXPECT_TRUE(api_->Stop().ok());
    }
  }
  HttpClient::Reply Post(const std::string& target, const std::string& body, bool token = true) {
    std::map<std::string, std::string> h;
    if (token) h["Authorization"] = "Bearer s3cret";
    auto r = client_->Request("POST", target, body, h);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : HttpClient::Reply{};
  }
  HttpClient::Reply Get(const std::string& target) {
    auto r = client_->Request("GET", target, "");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : HttpClient::Reply{};
  }
  // The "template" of an annotate reply: its 16 hex digits, or "" for null.
  static std::string TemplateOf(const std::string& body) {
    const size_t at = body.find("\"template\":\"");
    return at == std::string::npos ? "" : body.substr(at + 12, 16);
  }

  test::TempDir dir_;
  std::unique_ptr<EmailApi> api_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<HttpClient> client_;
};

TEST_F(EmailApiTest, IngestThenAnnotateAndLookUpTemplates) {
  std::string body;
  for (const auto& r : et::Stream(30, 8)) body += et::JsonLine(r);
  const auto ingest = Post("/v1/emails", body);
  ASSERT_EQ(ingest.status, 202u) << ingest.body;
  EXPECT_NE(ingest.body.find("\"accepted\":98"), std::string::npos) << ingest.body;
  ASSERT_TRUE(api_->inducer()->Drain().ok());
  // The annotator's own thread picks the templates up; nothing here asks it to.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while ((api_->annotator()->snapshot() == nullptr || api_->annotator()->snapshot()->Unique().size() < 3) &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::string formed;
  for (const auto* t : api_->annotator()->snapshot()->Unique()) {
    formed += " [" + t->subject_pattern() + ": " + std::to_string(t->emails()) + " emails]";
  }
  ASSERT_EQ(api_->annotator()->snapshot()->Unique().size(), 3u) << formed;
  EXPECT_GE(api_->annotator()->refreshes(), 2u);

  const auto receipt = Post("/v1/emails/annotate", et::JsonLine(et::TemplateEmail(1, 77, 500, 1'717'400'000'000)));
  ASSERT_EQ(receipt.status, 200u) << receipt.body;
  EXPECT_NE(receipt.body.find("\"id\":\"t1-77\""), std::string::npos) << receipt.body;
  const std::string id = TemplateOf(receipt.body);
  ASSERT_EQ(id.size(), 16u) << receipt.body;
  const auto t = Get("/v1/templates/" + id);
  ASSERT_EQ(t.status, 200u) << t.body;
  EXPECT_NE(t.body.find("\"id\":\"" + id + "\""), std::string::npos);
  EXPECT_NE(t.body.find("receipt"), std::string::npos) << t.body;

  // Another template's email gets another id; a personal email none.
  const auto reset = Post("/v1/emails/annotate", et::JsonLine(et::TemplateEmail(0, 78, 501, 1'717'400'000'000)));
  ASSERT_EQ(reset.status, 200u);
  EXPECT_NE(TemplateOf(reset.body), id);
  EXPECT_EQ(TemplateOf(reset.body).size(), 16u);
  const auto personal = Post("/v1/emails/annotate", et::JsonLine(et::PersonalEmail(3, 1'717'400'000'000)));
  ASSERT_EQ(personal.status, 200u);
  EXPECT_NE(personal.body.find("\"template\":null"), std::string::npos) << personal.body;

  EXPECT_EQ(Get("/v1/templates/0123456789abcdef").status, 404u);
  EXPECT_EQ(Get("/v1/templates/nothex").status, 400u);
  std::string metrics;
  api_->AppendMetrics(&metrics);
  EXPECT_NE(metrics.find("neardup_email_offered_total 98"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("neardup_email_annotated_total 3"), std::string::npos);
  EXPECT_NE(metrics.find("neardup_email_templates 3"), std::string::npos);
}

TEST_F(EmailApiTest, BadRequestsAreNamedAndOfferNothing) {
  const std::string good = et::JsonLine(et::TemplateEmail(0, 1, 1, 1'717'400'000'000));
  // Writes need the token.
  EXPECT_EQ(Post("/v1/emails", good, /*token=*/false).status, 401u);
  EXPECT_EQ(Post("/v1/emails/annotate", good, /*token=*/false).status, 401u);
  // Line 3 has no recipient: the reply names it and its field, and nothing of the body is offered.
  const std::string bad = good + "\n" + R"({"id":"x","sender":"a@b.example","subject":"Secret","html":"<p>x</p>"})" + "\n" + good;
  const auto r = Post("/v1/emails", bad);
  EXPECT_EQ(r.status, 400u);
  EXPECT_NE(r.body.find("line 3"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("recipient"), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find("Secret"), std::string::npos) << r.body;
  EXPECT_EQ(Post("/v1/emails", "not json\n").status, 400u);
  EXPECT_EQ(Post("/v1/emails", "\n\n").status, 400u);
  EXPECT_EQ(Post("/v1/emails/annotate", good + good).status, 400u);  // one email only
  EXPECT_EQ(Get("/v1/emails").status, 405u);
  EXPECT_EQ(Post("/v1/templates/0123456789abcdef", "").status, 405u);
  EXPECT_EQ(Get("/v1/mails").status, 404u);
  ASSERT_TRUE(api_->inducer()->Drain().ok());
  EXPECT_EQ(api_->inducer()->stats().emails, 0u);
  std::string metrics;
  api_->AppendMetrics(&metrics);
  EXPECT_NE(metrics.find("neardup_email_unauthorized_total 2"), std::string::npos) << metrics;
}

}  // namespace
}  // namespace neardup::cluster
