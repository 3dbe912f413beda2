#include "email/threads/thread_weaver.h"

#include <gtest/gtest.h>
#include <leveldb/env.h>
#include <leveldb/helpers/memenv.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>
#include <random>
#include <thread>

#include "email/threads/mailbox_gen.h"
#include "storage/fault_env.h"

namespace neardup::email {
namespace {

// prefix followed by the number (written with append: g++ 12 warns falsely on "literal" + string).
[[maybe_unused]] std::string N(std::string_view prefix, uint64_t i) { return std::string(prefix).append(std::to_string(i)); }

// The oracle: connected components of the bipartite thread / Message-ID graph (union-find).
class Oracle {
 public:
  explicit Oracle(const std::vector<ThreadEmail>& emails) {
    for (const ThreadEmail& e : emails) {
      const size_t t = Node(std::string("T").append(ThreadKey(e.gid, e.thread)));
      threads_.emplace(ThreadKey(e.gid, e.thread), t);
      if (!e.message_id.empty()) Union(t, Node(std::string("M").append(e.message_id)));
    }
    for (const auto& [key, node] : threads_) members_[Find(node)].push_back(key);
  }
  // The threads unified with `key`, sorted (the key alone when it has none).
  std::vector<std::string> Component(const std::string& key) {
    auto it = threads_.find(key);
    if (it == threads_.end()) return {};
    return members_[Find(it->second)];
  }
  const std::map<std::string, size_t>& threads() const { return threads_; }

 private:
  size_t Node(const std::string& name) {
    auto [it, fresh] = ids_.emplace(name, parent_.size());
    if (fresh) parent_.push_back(parent_.size());
    return it->second;
  }
  size_t Find(size_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Union(size_t a, size_t b) { parent_[Find(a)] = Find(b); }
  std::map<std::string, size_t> ids_;
  std::vector<size_t> parent_;
  std::map<std::string, size_t> threads_;  // thread key -> node
  std::map<size_t, std::vector<std::string>> members_;
};

class ThreadWeaverTest : public ::testing::Test {
 protected:
  ThreadWeaverOptions Options(uint32_t spam_cap = 10'000) {
    ThreadWeaverOptions o;
    o.path = N("/tw-", ++stores_);
    o.env = mem_env_.get();
    o.spam_cap = spam_cap;
    return o;
  }
  std::unique_ptr<ThreadWeaver> OpenWeaver(const ThreadWeaverOptions& o) {
    auto w = ThreadWeaver::Open(o);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    return w.ok() ? std::move(w).value() : nullptr;
  }
  static void AddAll(ThreadWeaver& w, const std::vector<ThreadEmail>& emails) {
    for (const ThreadEmail& e : emails) ASSERT_TRUE(w.Add(e).ok());
  }
  // Every thread's unified thread equals its component.
  static void ExpectMatchesOracle(const ThreadWeaver& w, const std::vector<ThreadEmail>& emails) {
    Oracle oracle(emails);
    size_t checked = 0;
    for (const auto& [key, node] : oracle.threads()) {
      const std::string gid(GidOf(key));
      auto u = w.Lookup(gid, key.substr(gid.size() + 1));
      ASSERT_TRUE(u.ok()) << u.status().ToString();
      ASSERT_TRUE(u->known) << key;
      ASSERT_EQ(u->threads, oracle.Component(key)) << key;
      ++checked;
    }
    EXPECT_GT(checked, 0u);
  }
  std::unique_ptr<leveldb::Env> mem_env_{leveldb::NewMemEnv(leveldb::Env::Default())};
  int stores_ = 0;
};

ThreadEmail E(std::string gid, std::string thread, std::string msg, std::string team = "") {
  return ThreadEmail{std::move(gid), std::move(thread), std::move(msg), std::move(team)};
}

// The seed's timeline: A writes to B, who forwards to C, to D, to E: one unified thread and no
// merge, in time order; Alice and Charlie share nothing until Bob's thread holds a message of
// each: then one merge joins them.
TEST_F(ThreadWeaverTest, SeedTimelinesAndTheMergeBobBrings) {
  auto w = OpenWeaver(Options());
  ASSERT_NE(w, nullptr);
  std::vector<ThreadEmail> emails = {E("a", "111", "1"), E("b", "222", "1"), E("b", "222", "2"), E("c", "333", "2"),
                                     E("c", "333", "3"), E("d", "444", "3"), E("d", "444", "4"), E("e", "555", "4")};
  AddAll(*w, emails);
  auto u = w->Lookup("a", "111");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->threads, (std::vector<std::string>{"a:111", "b:222", "c:333", "d:444", "e:555"}));
  EXPECT_EQ(u->unified, (std::vector<std::string>{"a:111"}));
  EXPECT_EQ(w->stats().merges, 0u);

  std::vector<ThreadEmail> more = {E("alice", "x", "m1"), E("alice", "x", "m2"), E("alice", "x", "m3"),
                                   E("charlie", "y", "m5"), E("charlie", "y", "m6"), E("charlie", "y", "m7")};
  AddAll(*w, more);
  u = w->Lookup("alice", "x");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->threads, (std::vector<std::string>{"alice:x"}));
  AddAll(*w, {E("bob", "z", "m3"), E("bob", "z", "m5")});
  EXPECT_EQ(w->stats().merges, 1u);
  u = w->Lookup("charlie", "y");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->threads, (std::vector<std::string>{"alice:x", "bob:z", "charlie:y"}));
  EXPECT_EQ(u->unified, (std::vector<std::string>{"alice:x", "charlie:y"}));
  // Filtered to a team's mailboxes; the walk still crosses Bob's.
  const std::unordered_set<std::string> team = {"alice", "charlie"};
  u = w->Lookup("alice", "x", &team);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->threads, (std::vector<std::string>{"alice:x", "charlie:y"}));
  more.insert(more.end(), {E("bob", "z", "m3"), E("bob", "z", "m5")});
  emails.insert(emails.end(), more.begin(), more.end());
  ExpectMatchesOracle(*w, emails);
  auto unknown = w->Lookup("nobody", "t");
  ASSERT_TRUE(unknown.ok());
  EXPECT_FALSE(unknown->known);
}

TEST_F(ThreadWeaverTest, MissingMessageIdNeverUnifiesAndBadIdsAreRefused) {
  auto w = OpenWeaver(Options());
  ASSERT_NE(w, nullptr);
  AddAll(*w, {E("a", "1", ""), E("b", "2", ""), E("c", "3", "  "), E("a", "1", "<x>"), E("d", "4", "<x>")});
  auto u = w->Lookup("b", "2");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->threads, (std::vector<std::string>{"b:2"}));
  u = w->Lookup("a", "1");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->threads, (std::vector<std::string>{"a:1", "d:4"}));
  EXPECT_EQ(w->stats().no_message_id, 3u);
  EXPECT_EQ(w->Add(E("a:b", "1", "<y>")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w->Add(E("", "1", "<y>")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w->Add(E("a", "", "<y>")).code(), StatusCode::kInvalidArgument);
}

// Random graphs in random orders, and duplicated emails: always the union-find's components.
TEST_F(ThreadWeaverTest, RandomInputsMatchUnionFind) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed);
    const int gids = 3 + static_cast<int>(rng() % 20), msgs = 20 + static_cast<int>(rng() % 200);
    std::vector<ThreadEmail> emails;
    for (int i = 0; i < 600; ++i) {
      const std::string g = N("g", rng() % gids);
      const std::string t = N("t", rng() % 8);
      std::string m = rng() % 10 == 0 ? "" : N("<", rng() % msgs) + "@x>";
      emails.push_back(E(g, t, m));
      if (rng() % 20 == 0) emails.push_back(emails[rng() % emails.size()]);  // delivered again
    }
    auto w = OpenWeaver(Options());
    ASSERT_NE(w, nullptr);
    AddAll(*w, emails);
    ExpectMatchesOracle(*w, emails);
  }
}

// Orders made to force merges: a chain of n threads, each joined to the next by a message, added
// so that every new email finds the thread and the message on different unified threads (a
// merge chain of n links that a read must follow to its end); a star; the generator's mailboxes.
TEST_F(ThreadWeaverTest, AdversarialOrdersMatchUnionFind) {
  constexpr int kChain = 300;
  std::vector<ThreadEmail> chain;
  for (int i = 0; i < kChain; ++i) chain.push_back(E(N("g", i), "t", N("<own", i) + ">"));
  for (int i = 0; i + 1 < kChain; ++i) {
    chain.push_back(E(N("g", i), "t", N("<link", i) + ">"));
    chain.push_back(E(N("g", i + 1), "t", N("<link", i) + ">"));
  }
  auto w = OpenWeaver(Options());
  ASSERT_NE(w, nullptr);
  AddAll(*w, chain);
  EXPECT_EQ(w->stats().merges, static_cast<uint64_t>(kChain - 1));
  auto u = w->Lookup("g0", "t");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->threads.size(), static_cast<size_t>(kChain));
  EXPECT_EQ(u->unified.size(), static_cast<size_t>(kChain));
  ExpectMatchesOracle(*w, chain);

  std::vector<ThreadEmail> reversed(chain.rbegin(), chain.rend());
  w = OpenWeaver(Options());
  AddAll(*w, reversed);
  ExpectMatchesOracle(*w, reversed);

  std::vector<ThreadEmail> star;
  for (int i = 0; i < 200; ++i) star.push_back(E(N("g", i), N("t", i % 3), N("<own", i) + ">"));
  for (int i = 0; i < 200; i += 7) star.push_back(E(N("g", i), N("t", i % 3), "<hub>"));
  w = OpenWeaver(Options());
  AddAll(*w, star);
  ExpectMatchesOracle(*w, star);

  MailGenOptions g;
  g.emails = 20'000;
  g.reused_message_id_share = 0;  // no spam: the oracle's components are the answer
  const std::vector<ThreadEmail> mail = GenerateMailboxes(g);
  w = OpenWeaver(Options());
  AddAll(*w, mail);
  ExpectMatchesOracle(*w, mail);
}

// Writers at once, on the same threads and Message-IDs: the same components as one writer.
TEST_F(ThreadWeaverTest, ConcurrentWritersMatchUnionFind) {
  MailGenOptions g;
  g.emails = 12'000;
  g.teams = 4;
  g.users_per_team = 6;
  g.reused_message_id_share = 0;
  std::vector<ThreadEmail> emails = GenerateMailboxes(g);
  std::mt19937_64 rng(3);
  std::shuffle(emails.begin(), emails.end(), rng);
  auto w = OpenWeaver(Options());
  ASSERT_NE(w, nullptr);
  constexpr int kThreads = 8;
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; i < emails.size(); i += kThreads) errors += !w->Add(emails[i]).ok();
    });
  }
  // Reads while writing: never an error, never a thread outside the final component.
  Oracle oracle(emails);
  std::atomic<bool> done{false};
  std::thread reader([&] {
    size_t i = 0;
    while (!done.load()) {
      const ThreadEmail& e = emails[i++ % emails.size()];
      auto u = w->Lookup(e.gid, e.thread);
      if (!u.ok()) {
        ++errors;
        continue;
      }
      const auto comp = oracle.Component(ThreadKey(e.gid, e.thread));
      for (const std::string& t : u->threads) errors += !std::binary_search(comp.begin(), comp.end(), t);
    }
  });
  for (auto& t : threads) t.join();
  done = true;
  reader.join();
  EXPECT_EQ(errors.load(), 0);
  ExpectMatchesOracle(*w, emails);
}

// A crash at a random point (the store's files lose what no Sync covered, with a torn tail) while
// writers run: every acknowledged email is there, nothing is answered that no email given says,
// no merge or thread mapping is half written; given again, the unacknowledged emails complete it.
TEST_F(ThreadWeaverTest, CrashAtRandomPointsLosesNothingAcknowledged) {
  MailGenOptions g;
  g.emails = 6'000;
  g.teams = 4;
  g.users_per_team = 5;
  g.reused_message_id_share = 0;
  const std::vector<ThreadEmail> emails = GenerateMailboxes(g);
  std::mt19937_64 rng(11);
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE(round);
    FaultyEnv env(mem_env_.get());
    ThreadWeaverOptions o = Options();
    o.env = &env;
    auto w = OpenWeaver(o);
    ASSERT_NE(w, nullptr);
    constexpr int kThreads = 4;
    std::vector<std::vector<size_t>> acked(kThreads);
    std::vector<size_t> tried(kThreads, 0);
    env.CrashAfterAppends(500 + static_cast<int64_t>(rng() % 8000));
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        std::vector<size_t> mine;
        for (size_t i = t; i < emails.size(); i += kThreads) {
          tried[t] = i + 1;
          if (!w->Add(emails[i]).ok()) return;
          mine.push_back(i);
          if (mine.size() % 25 == 0) {
            if (!w->Sync().ok()) return;
            acked[t].insert(acked[t].end(), mine.begin(), mine.end());
            mine.clear();
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    w.reset();
    env.DropUnsyncedData(&rng);
    env.Recover();
    w = OpenWeaver(o);
    ASSERT_NE(w, nullptr);
    std::vector<ThreadEmail> acknowledged, attempted;
    for (int t = 0; t < kThreads; ++t) {
      for (size_t i : acked[t]) acknowledged.push_back(emails[i]);
      for (size_t i = t; i < tried[t]; i += kThreads) attempted.push_back(emails[i]);
    }
    ASSERT_FALSE(acknowledged.empty());
    ASSERT_LT(acknowledged.size(), emails.size()) << "the crash came after the last email";
    Oracle low(acknowledged), high(attempted);
    for (const auto& [key, node] : low.threads()) {
      const std::string gid(GidOf(key));
      auto u = w->Lookup(gid, key.substr(gid.size() + 1));
      ASSERT_TRUE(u.ok());
      ASSERT_TRUE(u->known) << key << " was acknowledged";
      const auto need = low.Component(key), may = high.Component(key);
      EXPECT_TRUE(std::includes(u->threads.begin(), u->threads.end(), need.begin(), need.end())) << key;
      EXPECT_TRUE(std::includes(may.begin(), may.end(), u->threads.begin(), u->threads.end())) << key;
    }
    // No half-written merge or mapping.
    RowStore& s = w->store();
    const auto unified = s.family("tw_unified"), thread = s.family("tw_thread");
    std::set<std::pair<std::string, std::string>> merges;
    std::map<std::string, std::string> members;  // thread -> unified thread listing it
    ASSERT_TRUE(s.ScanFamily(unified, [&](std::string_view row, std::string_view col, std::string_view) {
      if (col[0] == 'M') merges.emplace(row, col.substr(1));
      if (col[0] == 'T') members.emplace(col.substr(1), row);
      return true;
    }).ok());
    for (const auto& [a, b] : merges) EXPECT_TRUE(merges.count({b, a})) << "half a merge " << a << " " << b;
    size_t mapped = 0;
    ASSERT_TRUE(s.ScanFamily(thread, [&](std::string_view row, std::string_view, std::string_view ut) {
      auto it = members.find(std::string(row));
      EXPECT_TRUE(it != members.end() && it->second == ut) << "thread " << row << " mapped without its cell";
      ++mapped;
      return true;
    }).ok());
    EXPECT_EQ(mapped, members.size());
    // The source delivers again what was not acknowledged (and the rest): exact.
    AddAll(*w, emails);
    ExpectMatchesOracle(*w, emails);
  }
}

// A system reusing one Message-ID: its unified thread passes the cap and is ignored, merges and
// all, so it joins nothing; threads away from it are answered exactly.
TEST_F(ThreadWeaverTest, ASpamMessageIdPastTheCapIsIgnored) {
  constexpr uint32_t kCap = 50;
  auto w = OpenWeaver(Options(kCap));
  ASSERT_NE(w, nullptr);
  std::vector<ThreadEmail> normal;
  for (int i = 0; i < 100; ++i) {
    normal.push_back(E(N("u", i), "conv", N("<c", i / 2) + ">"));  // pairs
  }
  AddAll(*w, normal);
  std::vector<ThreadEmail> spam;
  for (int i = 0; i < 200; ++i) spam.push_back(E(N("u", i % 100), N("n", i), "<noreply@sys>"));
  // Two normal threads that also got the spam message in them: the cap keeps them apart.
  spam.push_back(E("u0", "conv", "<noreply@sys>"));
  spam.push_back(E("u10", "conv", "<noreply@sys>"));
  AddAll(*w, spam);
  auto u = w->Lookup("u0", "conv");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->threads, (std::vector<std::string>{"u0:conv", "u1:conv"}));
  EXPECT_EQ(u->spam, 1u);
  u = w->Lookup("u10", "conv");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->threads, (std::vector<std::string>{"u10:conv", "u11:conv"}));
  u = w->Lookup("u5", "n5");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->threads, (std::vector<std::string>{"u5:n5"}));  // itself only
  EXPECT_GE(u->spam, 1u);
  ExpectMatchesOracle(*w, normal);  // every pair of normal threads, as before the spam
}

TEST_F(ThreadWeaverTest, TeamsRecordTheirMailboxes) {
  auto w = OpenWeaver(Options());
  ASSERT_NE(w, nullptr);
  AddAll(*w, {E("a", "1", "<m>", "acme"), E("b", "2", "<m>", "acme"), E("c", "3", "<m>", "other")});
  auto gids = w->TeamGids("acme");
  ASSERT_TRUE(gids.ok());
  EXPECT_EQ(*gids, (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace neardup::email
