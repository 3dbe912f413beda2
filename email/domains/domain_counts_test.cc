#include "email/domains/domain_counts.h"

#include <gtest/gtest.h>
#include <leveldb/env.h>
#include <leveldb/helpers/memenv.h>

#include <map>
#include <random>
#include <thread>

#include "email/domains/user_event_gen.h"

namespace neardup::email {
namespace {

// prefix followed by the number (written with append: g++ 12 warns falsely on "literal" + string).
[[maybe_unused]] std::string N(std::string_view prefix, uint64_t i) { return std::string(prefix).append(std::to_string(i)); }

class DomainCountsTest : public ::testing::Test {
 protected:
  std::unique_ptr<DomainCounts> OpenCounts(bool healer_thread, double sample = 0) {
    DomainCountsOptions o;
    o.path = N("/dc-", ++stores_);
    o.env = mem_env_.get();
    o.healer_thread = healer_thread;
    o.healer_sample_rate = sample;
    auto d = DomainCounts::Open(o);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d.ok() ? std::move(d).value() : nullptr;
  }
  static void ApplyAll(DomainCounts& d, const std::vector<DomainRecord>& records, size_t batch = 256) {
    for (size_t i = 0; i < records.size(); i += batch) {
      const size_t n = std::min(batch, records.size() - i);
      ASSERT_TRUE(d.Apply(std::span(records).subspan(i, n)).ok());
    }
  }
  // Every key of the truth has its exact count, and every other key counts 0.
  static void ExpectExact(const DomainCounts& d, const UserEventStream& s) {
    std::map<DomainKey, int64_t> truth(s.truth.begin(), s.truth.end());
    auto all = d.AllCounts();
    ASSERT_TRUE(all.ok());
    size_t wrong = 0;
    for (const auto& [key, count] : *all) {
      const auto it = truth.find(key);
      const int64_t want = it == truth.end() ? 0 : it->second;
      if (count != want) ++wrong;
    }
    for (const auto& [key, count] : truth) wrong += d.Count(key) != count;
    EXPECT_EQ(wrong, 0u);
  }
  std::unique_ptr<leveldb::Env> mem_env_{leveldb::NewMemEnv(leveldb::Env::Default())};
  int stores_ = 0;
};

DomainRecord Event(DomainEventType type, std::string id, std::string user, std::string email, std::string role,
                   std::string new_email = "", std::string new_role = "") {
  DomainRecord r;
  r.kind = DomainRecord::Kind::kEvent;
  r.event = DomainEvent{std::move(id), type, "T", std::move(user), std::move(email), std::move(new_email), std::move(role),
                        std::move(new_role)};
  return r;
}

DomainRecord User(std::string user, std::string email, std::string role, bool active, uint64_t version) {
  DomainRecord r;
  r.kind = DomainRecord::Kind::kUser;
  r.user = UserRow{"T", std::move(user), std::move(email), std::move(role), active, version};
  return r;
}

TEST_F(DomainCountsTest, EventsApplyPlusAndMinusOne) {
  auto d = OpenCounts(/*healer_thread=*/false);
  ASSERT_NE(d, nullptr);
  ApplyAll(*d, {Event(DomainEventType::kJoined, "1", "u1", "a@Acme.com", "member"),
                Event(DomainEventType::kJoined, "2", "u2", "b@acme.com", "member"),
                Event(DomainEventType::kEmailChanged, "3", "u2", "b@acme.com", "member", "b@beta.io"),
                Event(DomainEventType::kRoleChanged, "4", "u1", "a@acme.com", "member", "", "admin"),
                Event(DomainEventType::kLeft, "5", "u1", "a@acme.com", "admin")});
  EXPECT_EQ(d->Count({"T", "acme.com", "member"}), 0);
  EXPECT_EQ(d->Count({"T", "acme.com", "admin"}), 0);
  EXPECT_EQ(d->Count({"T", "beta.io", "member"}), 1);
  EXPECT_EQ(d->healer_report().negative_triggers, 0u);
}

// A late "joined" after its "left": the count goes negative, the healer is called for the key and
// brings it to what the user rows say, and the late event then lands on top.
TEST_F(DomainCountsTest, ANegativeCountCallsTheHealer) {
  auto d = OpenCounts(/*healer_thread=*/false);
  ASSERT_NE(d, nullptr);
  ApplyAll(*d, {User("u1", "a@acme.com", "member", true, 1), User("u1", "a@acme.com", "member", false, 2),
                Event(DomainEventType::kLeft, "2", "u1", "a@acme.com", "member")});
  EXPECT_EQ(d->Count({"T", "acme.com", "member"}), -1);
  EXPECT_EQ(d->healer_report().negative_triggers, 1u);
  ASSERT_TRUE(d->DrainHealer().ok());
  EXPECT_EQ(d->Count({"T", "acme.com", "member"}), 0);
  const HealerReport r = d->healer_report();
  EXPECT_EQ(r.keys_healed, 1u);
  EXPECT_EQ(r.corrections, 1u);
  // An older user row changes nothing.
  ApplyAll(*d, {User("u1", "a@acme.com", "member", true, 1)});
  auto n = d->TrueCount({"T", "acme.com", "member"});
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0);
}

// The generator's stream (duplicated, dropped and late events at the configured rates) drifts;
// after HealAll every count is exact.
TEST_F(DomainCountsTest, DuplicatedDroppedAndReorderedEventsHealToExact) {
  UserEventGenOptions g;
  g.changes = 20'000;
  g.teams = 20;
  g.duplicate_rate = 0.02;
  g.drop_rate = 0.02;
  g.reorder_rate = 0.05;
  const UserEventStream s = GenerateUserEvents(g);
  ASSERT_GT(s.duplicated, 0u);
  ASSERT_GT(s.dropped, 0u);
  ASSERT_GT(s.reordered, 0u);
  auto d = OpenCounts(/*healer_thread=*/false);
  ASSERT_NE(d, nullptr);
  ApplyAll(*d, s.records);
  size_t drifted = 0;
  for (const auto& [key, count] : s.truth) drifted += d->Count(key) != count;
  EXPECT_GT(drifted, 0u);  // the stream does drift the view
  ASSERT_TRUE(d->HealAll().ok());
  ExpectExact(*d, s);
  EXPECT_GT(d->healer_report().keys_healed, 0u);
  // The user rows themselves are exact (their versions absorb order and repeats).
  for (const auto& [key, count] : s.truth) {
    auto n = d->TrueCount(key);
    ASSERT_TRUE(n.ok());
    ASSERT_EQ(*n, count);
  }
}

// The healer on its own thread, healing sampled and negative keys (and a sweep of every key)
// while ingestion goes on: every count equals the sum of the events applied to it plus the
// corrections the healer applied (no mutation lost under a heal), and after a last sweep the
// counts are exact.
TEST_F(DomainCountsTest, TheHealerDuringIngestionLosesNoMutation) {
  UserEventGenOptions g;
  g.changes = 20'000;
  g.teams = 10;
  const UserEventStream s = GenerateUserEvents(g);
  auto d = OpenCounts(/*healer_thread=*/true, /*sample=*/0.2);
  ASSERT_NE(d, nullptr);
  std::atomic<bool> done{false};
  std::thread sweeper([&] {
    while (!done.load()) ASSERT_TRUE(d->HealAll().ok());
  });
  // What the events alone add to each key.
  std::map<std::string, int64_t> applied;
  for (const DomainRecord& r : s.records) {
    if (r.kind != DomainRecord::Kind::kEvent) continue;
    const DomainEvent& e = r.event;
    auto add = [&](const std::string& domain, const std::string& role, int64_t v) { applied[e.team + "|" + domain + "|" + role] += v; };
    switch (e.type) {
      case DomainEventType::kJoined: add(DomainOf(e.email), e.role, 1); break;
      case DomainEventType::kLeft: add(DomainOf(e.email), e.role, -1); break;
      case DomainEventType::kEmailChanged: add(DomainOf(e.email), e.role, -1); add(DomainOf(e.new_email), e.role, 1); break;
      case DomainEventType::kRoleChanged: add(DomainOf(e.email), e.role, -1); add(DomainOf(e.email), e.new_role, 1); break;
    }
  }
  ApplyAll(*d, s.records, 64);
  done = true;
  sweeper.join();
  ASSERT_TRUE(d->DrainHealer().ok());
  const HealerReport r = d->healer_report();
  EXPECT_GT(r.keys_healed, 0u);
  EXPECT_GT(r.sampled_triggers, 0u);
  // Heals and events are all relative increments: every counter holds exactly the events applied
  // to it plus the differences the heals applied. A heal that set the count instead would drop the
  // events applied between its snapshot and its write.
  auto all = d->AllCounts();
  ASSERT_TRUE(all.ok());
  int64_t heal_total = 0;
  for (const auto& [key, count] : *all) heal_total += count - applied[key.team + "|" + key.domain + "|" + key.role];
  EXPECT_EQ(heal_total, r.net_correction);
  ASSERT_TRUE(d->HealAll().ok());
  ExpectExact(*d, s);
}

TEST_F(DomainCountsTest, ClassifiesByContextThenByCounts) {
  auto d = OpenCounts(/*healer_thread=*/false);
  ASSERT_NE(d, nullptr);
  pb::EmailConfig c = ConfigDefaults().email();
  std::vector<DomainRecord> rs;
  for (int i = 0; i < 10; ++i) rs.push_back(Event(DomainEventType::kJoined, N("a", i), N("a", i), "x@acme.com", "member"));
  for (int i = 0; i < 4; ++i) rs.push_back(Event(DomainEventType::kJoined, N("p", i), N("p", i), "x@partner.io", "guest"));
  rs.push_back(Event(DomainEventType::kJoined, "q", "q", "x@partner.io", "member"));
  for (int i = 0; i < 3; ++i) rs.push_back(Event(DomainEventType::kJoined, N("s", i), N("s", i), "x@sub.acme.net", "member"));
  DomainRecord team;
  team.kind = DomainRecord::Kind::kTeam;
  team.team = TeamSettings{"T", {"acme.com"}};
  rs.push_back(team);
  ApplyAll(*d, rs);
  auto settings = d->Team("T");
  ASSERT_TRUE(settings.ok());
  EXPECT_EQ(settings->domains, (std::vector<std::string>{"acme.com"}));
  auto k = d->Classify(*settings, "boss@acme.com", "new@ACME.com", c);
  ASSERT_TRUE(k.ok());
  EXPECT_TRUE(k->internal);
  EXPECT_EQ(k->reason, "the invitee's domain is one of the team's own");
  k = d->Classify(*settings, "me@gmail.com", "you@gmail.com", c);  // a public provider: counts decide
  ASSERT_TRUE(k.ok());
  EXPECT_FALSE(k->internal);
  k = d->Classify(*settings, "me@sub.acme.net", "you@sub.acme.net", c);
  ASSERT_TRUE(k.ok());
  EXPECT_TRUE(k->internal);  // the inviter's domain
  k = d->Classify(*settings, "boss@acme.com", "x@sub.acme.net", c);
  ASSERT_TRUE(k.ok());
  EXPECT_TRUE(k->internal) << k->reason;  // 3 members, all full, 3/14 of the team
  EXPECT_EQ(k->members, 3);
  k = d->Classify(*settings, "boss@acme.com", "x@partner.io", c);
  ASSERT_TRUE(k.ok());
  EXPECT_FALSE(k->internal);  // mostly guests
  EXPECT_EQ(k->guests, 4);
  c.set_domain_internal_min_members(4);
  k = d->Classify(*settings, "boss@acme.com", "x@sub.acme.net", c);
  ASSERT_TRUE(k.ok());
  EXPECT_FALSE(k->internal);  // the threshold is configuration
  EXPECT_FALSE(d->Classify(*settings, "boss@acme.com", "not-an-address", c).ok());
}

TEST_F(DomainCountsTest, RecordsParseAndBadOnesNameTheField) {
  DomainRecord r;
  ASSERT_TRUE(ParseDomainRecord(R"({"kind":"event","id":"1","type":"email_changed","team":"T","user":"u","email":"a@x.com","role":"member","new_email":"a@y.com"})", &r).ok());
  EXPECT_EQ(r.event.type, DomainEventType::kEmailChanged);
  DomainRecord back;
  ASSERT_TRUE(ParseDomainRecord(DomainRecordJson(r), &back).ok());
  EXPECT_EQ(back.event.new_email, "a@y.com");
  Status s = ParseDomainRecord(R"({"kind":"event","id":"1","type":"moved","team":"T","user":"u","email":"a@x.com","role":"m"})", &r);
  EXPECT_NE(s.message().find("type"), std::string::npos);
  s = ParseDomainRecord(R"({"kind":"user","team":"T","user":"u","email":"nodomain","role":"m","version":1})", &r);
  EXPECT_NE(s.message().find("email"), std::string::npos);
  s = ParseDomainRecord(R"({"kind":"user","team":"T","user":"u","email":"a@b.c","role":"m"})", &r);
  EXPECT_NE(s.message().find("version"), std::string::npos);
  EXPECT_FALSE(ParseDomainRecord("not json", &r).ok());
  EXPECT_FALSE(ParseDomainRecord(R"({"kind":"team","team":"T"})", &r).ok());
}

}  // namespace
}  // namespace neardup::email
