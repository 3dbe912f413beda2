// The email endpoints on a loopback HTTP server: ingest, annotate and template lookups, the
// bearer token, bad lines named by number, and the snapshot refreshed in the background; unified
// threads added and looked up, domain records applied and invitees classified.
#include "cluster/email_api/email_api.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "cluster/http/http_client.h"
#include "common/config.h"
#include "email/templates/email_test_util.h"
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
    o.threads_store = dir_.File("threads");
    o.domains_store = dir_.File("domains");
    o.max_records = 50;
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

namespace neardup::cluster {
namespace {

std::string ThreadLine(const std::string& gid, const std::string& thread, const std::string& msg,
                       const std::string& team) {
  return R"({"gid":")" + gid + R"(","thread":")" + thread + R"(","message_id":")" + msg + R"(","team":")" + team +
         "\"}\n";
}

TEST_F(EmailApiTest, ThreadsAreAddedThenLookedUpAcrossMailboxes) {
  const std::string body = ThreadLine("alice", "x", "<m1@a>", "acme") + ThreadLine("bob", "y", "<m1@a>", "acme") +
                           "\n" + ThreadLine("carol", "z", "<m1@a>", "other") + ThreadLine("dave", "w", "<m9@a>", "acme");
  EXPECT_EQ(Post("/v1/threads", body, /*token=*/false).status, 401u);
  EXPECT_EQ(Get("/v1/threads?gid=alice&thread=x").body.find("\"known\":true"), std::string::npos)
      << "nothing added without the token";
  const auto added = Post("/v1/threads", body);
  ASSERT_EQ(added.status, 200u) << added.body;
  EXPECT_EQ(added.body, "{\"added\":4}\n");

  auto u = Get("/v1/threads?gid=alice&thread=x");
  ASSERT_EQ(u.status, 200u) << u.body;
  EXPECT_NE(u.body.find(R"("known":true,"threads":["alice:x","bob:y","carol:z"])"), std::string::npos) << u.body;
  u = Get("/v1/threads?gid=carol&thread=z&team=acme");  // acme's mailboxes: alice, bob, dave
  EXPECT_NE(u.body.find(R"("threads":["alice:x","bob:y"])"), std::string::npos) << u.body;
  u = Get("/v1/threads?gid=bob&thread=y&team_gids=carol,dave");
  EXPECT_NE(u.body.find(R"("threads":["carol:z"])"), std::string::npos) << u.body;
  u = Get("/v1/threads?gid=dave&thread=w");
  EXPECT_NE(u.body.find(R"("threads":["dave:w"])"), std::string::npos) << u.body;
  u = Get("/v1/threads?gid=nobody&thread=t");
  ASSERT_EQ(u.status, 200u);
  EXPECT_NE(u.body.find(R"("known":false)"), std::string::npos) << u.body;

  EXPECT_EQ(Get("/v1/threads?gid=alice").status, 400u);
  EXPECT_EQ(Get("/v1/threads?gid=a%3Ab&thread=t").status, 400u) << "a gid with ':'";
  auto put = client_->Request("PUT", "/v1/threads", body, {{"Authorization", "Bearer s3cret"}});
  ASSERT_TRUE(put.ok());
  EXPECT_EQ(put->status, 405u);
}

TEST_F(EmailApiTest, BadThreadLinesAreNamedAndAddNothing) {
  const std::string bad = ThreadLine("erin", "e1", "<m5@a>", "acme") + "\n" + R"({"gid":"a:b","thread":"t"})" + "\n";
  const auto r = Post("/v1/threads", bad);
  EXPECT_EQ(r.status, 400u);
  EXPECT_NE(r.body.find("line 3"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find(R"("line":"3")"), std::string::npos) << r.body;
  EXPECT_NE(Get("/v1/threads?gid=erin&thread=e1").body.find(R"("known":false)"), std::string::npos)
      << "the good line before it was not added";
  EXPECT_EQ(Post("/v1/threads", "\n\n").status, 400u) << "no record";

  std::string many;
  for (int i = 0; i < 51; ++i) many += ThreadLine("f", std::string("t").append(std::to_string(i)), "", "acme");
  const auto big = Post("/v1/threads", many);
  EXPECT_EQ(big.status, 413u) << big.body;
  EXPECT_NE(big.body.find("line 51"), std::string::npos) << big.body;
}

TEST_F(EmailApiTest, DomainRecordsAreAppliedThenInviteesClassified) {
  std::string body = R"({"kind":"team","team":"t1","domains":["acme.com"]})" "\n";
  for (int i = 1; i <= 3; ++i) {
    const std::string u = std::string("u").append(std::to_string(i));
    body += R"({"kind":"user","team":"t1","user":")" + u + R"(","email":")" + u +
            R"(@partner.com","role":"member","active":true,"version":1})" "\n";
    body += R"({"kind":"event","id":"e)" + std::to_string(i) + R"(","type":"joined","team":"t1","user":")" + u +
            R"(","email":")" + u + R"(@partner.com","role":"member"})" "\n";
  }
  EXPECT_EQ(Post("/v1/domain-events", body, /*token=*/false).status, 401u);
  const auto applied = Post("/v1/domain-events", body);
  ASSERT_EQ(applied.status, 200u) << applied.body;
  EXPECT_EQ(applied.body, "{\"records\":7,\"events\":3}\n");
  const email::DomainKey key{"t1", "partner.com", "member"};
  EXPECT_EQ(api_->domains()->Count(key), 3);

  auto c = Get("/v1/domains/classify?team=t1&inviter=boss%40acme.com&invitee=new%40partner.com");
  ASSERT_EQ(c.status, 200u) << c.body;
  EXPECT_NE(c.body.find(R"("class":"internal")"), std::string::npos) << c.body;
  EXPECT_NE(c.body.find(R"("members":3)"), std::string::npos) << c.body;
  c = Get("/v1/domains/classify?team=t1&inviter=boss@acme.com&invitee=x@acme.com");
  EXPECT_NE(c.body.find("one of the team's own"), std::string::npos) << c.body;
  c = Get("/v1/domains/classify?team=t1&inviter=boss@acme.com&invitee=y@gmail.com");
  EXPECT_NE(c.body.find(R"("class":"external")"), std::string::npos) << c.body;
  EXPECT_EQ(Get("/v1/domains/classify?team=t1&inviter=boss@acme.com").status, 400u);
  EXPECT_EQ(Get("/v1/domains/classify?team=t1&inviter=boss@acme.com&invitee=nodomain").status, 400u);
  EXPECT_EQ(Post("/v1/domains/classify", "").status, 405u);

  // A bad line: nothing of the request applied, the line named.
  const std::string bad = R"({"kind":"event","id":"e9","type":"joined","team":"t1","user":"u9","email":"u9@partner.com","role":"member"})"
                          "\n"
                          R"({"kind":"event","id":"e10","type":"exploded","team":"t1","user":"u9","email":"u9@partner.com","role":"member"})"
                          "\n";
  const auto r = Post("/v1/domain-events", bad);
  EXPECT_EQ(r.status, 400u);
  EXPECT_NE(r.body.find("line 2"), std::string::npos) << r.body;
  EXPECT_EQ(api_->domains()->Count(key), 3);

  // A duplicated event drifts the count; the healer brings it back to the user rows'.
  const auto dup = Post("/v1/domain-events",
                        R"({"kind":"event","id":"e1","type":"joined","team":"t1","user":"u1","email":"u1@partner.com","role":"member"})");
  ASSERT_EQ(dup.status, 200u) << dup.body;
  EXPECT_EQ(api_->domains()->Count(key), 4);
  ASSERT_TRUE(api_->domains()->HealAll().ok());
  EXPECT_EQ(api_->domains()->Count(key), 3);
}

}  // namespace
}  // namespace neardup::cluster
