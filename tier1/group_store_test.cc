// GroupStore and its Txn: read-your-writes, nothing before Commit, atomic commits under I/O
// failure, group ids that never repeat.
#include "tier1/group_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <leveldb/env.h>
#include <leveldb/helpers/memenv.h>

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "storage/fault_env.h"
#include "tier1/tier1_test_util.h"
#include "tier1/tier1.h"

namespace neardup::tier1 {
namespace {

using Urls = std::vector<std::string>;

class GroupStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<GroupStore> Open(uint64_t (*url_hash)(std::string_view) = nullptr) {
    GroupStore::Options o;
    o.path = "/group_store_test";
    o.sync = false;
    o.env = &env_;
    o.url_hash = url_hash;
    auto s = GroupStore::Open(o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  static void ExpectConsistent(const GroupStore& store, CheckReport* out = nullptr) {
    CheckReport r;
    ASSERT_TRUE(CheckStore(store, &r).ok());
    EXPECT_EQ(r.violation_count, 0u);
    for (const std::string& v : r.violations) ADD_FAILURE() << "invariant: " << v;
    if (out != nullptr) *out = r;
  }
  // Puts url into group gid (a consistent single-page change when gid is new).
  static void AddPage(GroupStore::Txn& txn, uint64_t gid, const std::string& url) {
    auto page = txn.MutablePage(url);
    ASSERT_TRUE(page.ok());
    (*page)->set_group(gid);
    (*page)->set_crawled(true);
    auto group = txn.MutableGroup(gid);
    ASSERT_TRUE(group.ok());
    (*group)->set_members((*group)->members() + 1);
    if ((*group)->winner().empty()) (*group)->set_winner(url);
    txn.AddMember(gid, url);
  }

  std::unique_ptr<leveldb::Env> mem_{leveldb::NewMemEnv(leveldb::Env::Default())};
  FaultyEnv env_{mem_.get()};
};

// The store's LevelDB options come from GroupStore::Options.
TEST_F(GroupStoreTest, LevelDbOptionsReachTheRowStore) {
  GroupStore::Options o;
  o.path = "/group_store_options";
  o.env = &env_;
  o.write_buffer_bytes = 3 << 20;
  o.cache_bytes = 5 << 20;
  o.compress = true;
  auto s = GroupStore::Open(o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->rows().options().write_buffer_bytes, uint64_t{3} << 20);
  EXPECT_EQ((*s)->rows().options().cache_bytes, uint64_t{5} << 20);
  EXPECT_TRUE((*s)->rows().options().compress);
}

TEST_F(GroupStoreTest, UncommittedTxnChangesNothing) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  {
    GroupStore::Txn txn(store.get());
    EXPECT_TRUE(txn.empty());
    const uint64_t gid = txn.NewGroupId();
    AddPage(txn, gid, "http://a.com/");
    AddPage(txn, gid, "http://b.com/");
    txn.AddRedirect("http://a.com/", "http://r.com/");
    txn.PutMeta("progress", "x");
    txn.AddCounter("batches", 1);
    EXPECT_FALSE(txn.empty());
    // Dropped without Commit.
  }
  pb::Tier1Page p;
  EXPECT_EQ(store->GetPage("http://a.com/", &p).code(), StatusCode::kNotFound);
  pb::Tier1Group g;
  EXPECT_EQ(store->GetGroup(1, &g).code(), StatusCode::kNotFound);
  std::vector<std::string> members;
  ASSERT_TRUE(store->Members(1, &members).ok());
  EXPECT_TRUE(members.empty());
  EXPECT_EQ(store->rows().Counter("batches"), 0);
  EXPECT_EQ(store->rows().Counter("next_group"), 0);
  std::string v;
  EXPECT_EQ(store->rows().Get(store->meta_family(), "progress", "", &v).code(), StatusCode::kNotFound);
  CheckReport r;
  ExpectConsistent(*store, &r);
  EXPECT_EQ(r.pages, 0u);
  EXPECT_EQ(r.groups, 0u);
  // An empty Commit writes nothing and succeeds.
  GroupStore::Txn txn(store.get());
  EXPECT_TRUE(txn.Commit().ok());
}

TEST_F(GroupStoreTest, TxnReadsItsOwnChanges) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  GroupStore::Txn setup(store.get());
  const uint64_t g1 = setup.NewGroupId(), g2 = setup.NewGroupId();
  ASSERT_NE(g1, g2);
  AddPage(setup, g1, "http://a.com/");
  AddPage(setup, g1, "http://b.com/");
  setup.AddRedirect("http://a.com/", "http://r1.com/");
  setup.AddRedirect("http://a.com/", "http://r2.com/");
  for (const char* r : {"http://r1.com/", "http://r2.com/"}) {
    AddPage(setup, g1, r);
    auto p = setup.MutablePage(r);
    ASSERT_TRUE(p.ok());
    (*p)->set_redirect_to("http://a.com/");
  }
  ASSERT_TRUE(setup.Commit().ok());
  ExpectConsistent(*store);
  EXPECT_TRUE(setup.empty());  // cleared by Commit, reusable

  GroupStore::Txn txn(store.get());
  std::vector<std::string> out;
  ASSERT_TRUE(txn.Members(g1, &out).ok());
  EXPECT_EQ(out, (Urls{"http://a.com/", "http://b.com/", "http://r1.com/", "http://r2.com/"}));
  txn.RemoveMember(g1, "http://b.com/");
  txn.AddMember(g1, "http://c.com/");
  txn.AddMember(g1, "http://0.com/");
  ASSERT_TRUE(txn.Members(g1, &out).ok());
  EXPECT_EQ(out, (Urls{"http://0.com/", "http://a.com/", "http://c.com/", "http://r1.com/", "http://r2.com/"}));
  // Removed then re-added; added then removed.
  txn.AddMember(g1, "http://b.com/");
  txn.RemoveMember(g1, "http://0.com/");
  ASSERT_TRUE(txn.Members(g1, &out).ok());
  EXPECT_EQ(out, (Urls{"http://a.com/", "http://b.com/", "http://c.com/", "http://r1.com/", "http://r2.com/"}));
  txn.AddMember(g2, "http://d.com/");
  ASSERT_TRUE(txn.Members(g2, &out).ok());
  EXPECT_EQ(out, (Urls{"http://d.com/"}));

  ASSERT_TRUE(txn.Redirectors("http://a.com/", &out).ok());
  EXPECT_EQ(out, (Urls{"http://r1.com/", "http://r2.com/"}));
  txn.RemoveRedirect("http://a.com/", "http://r1.com/");
  txn.AddRedirect("http://a.com/", "http://r3.com/");
  txn.AddRedirect("http://b.com/", "http://r1.com/");
  ASSERT_TRUE(txn.Redirectors("http://a.com/", &out).ok());
  EXPECT_EQ(out, (Urls{"http://r2.com/", "http://r3.com/"}));
  ASSERT_TRUE(txn.Redirectors("http://b.com/", &out).ok());
  EXPECT_EQ(out, (Urls{"http://r1.com/"}));
  ASSERT_TRUE(txn.Redirectors("http://none.com/", &out).ok());
  EXPECT_TRUE(out.empty());

  // Records: found through the Txn after change; created when missing; groups deleted and revived.
  auto a = txn.MutablePage("http://a.com/");
  ASSERT_TRUE(a.ok());
  (*a)->set_popularity(42);
  auto found = txn.FindPage("http://a.com/");
  ASSERT_TRUE(found.ok());
  ASSERT_NE(*found, nullptr);
  EXPECT_EQ((*found)->popularity(), 42);
  auto missing = txn.FindPage("http://missing.com/");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(*missing, nullptr);
  auto g = txn.FindGroup(g1);
  ASSERT_TRUE(g.ok());
  ASSERT_NE(*g, nullptr);
  EXPECT_EQ((*g)->members(), 4u);
  txn.DeleteGroup(g1);
  g = txn.FindGroup(g1);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(*g, nullptr);
  auto revived = txn.MutableGroup(g1);
  ASSERT_TRUE(revived.ok());
  EXPECT_EQ((*revived)->members(), 0u);
  EXPECT_EQ((*revived)->winner(), "");

  // None of it reached the store.
  std::vector<std::string> committed;
  ASSERT_TRUE(store->Members(g1, &committed).ok());
  EXPECT_EQ(committed, (Urls{"http://a.com/", "http://b.com/", "http://r1.com/", "http://r2.com/"}));
  pb::Tier1Page p;
  ASSERT_TRUE(store->GetPage("http://a.com/", &p).ok());
  EXPECT_EQ(p.popularity(), 0);
  ExpectConsistent(*store);
}

// Lookups of URLs the store never recorded skip LevelDB through an in-memory set of URL hashes:
// every committed page must still be found, in the same Txn, in a fresh one and after reopening,
// and a failed commit must not leave its pages behind.
TEST_F(GroupStoreTest, EveryCommittedPageIsFoundAndNoOther) {
  auto url = [](int i) { return "http://site" + std::to_string(i % 37) + ".com/p" + std::to_string(i); };
  auto found = [&](GroupStore* store, int from, int to) {
    GroupStore::Txn txn(store);
    int n = 0;
    for (int i = from; i < to; ++i) {
      auto p = txn.FindPage(url(i));
      EXPECT_TRUE(p.ok());
      if (p.ok() && *p != nullptr) ++n;
    }
    return n;
  };
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    GroupStore::Txn txn(store.get());
    EXPECT_EQ(found(store.get(), 0, 100), 0);
    for (int i = 0; i < 3000; ++i) {
      AddPage(txn, txn.NewGroupId(), url(i));
      if (i % 700 == 699) {
        ASSERT_TRUE(txn.Commit(/*durable=*/true, /*keep_cache=*/i % 1400 == 699).ok());
      }
    }
    ASSERT_TRUE(txn.Commit().ok());
    EXPECT_EQ(found(store.get(), 0, 3000), 3000);
    EXPECT_EQ(found(store.get(), 3000, 6000), 0);
    AddPage(txn, txn.NewGroupId(), url(3000));
    env_.fail_appends = true;
    EXPECT_FALSE(txn.Commit().ok());
    env_.fail_appends = false;
    EXPECT_EQ(found(store.get(), 3000, 3001), 0);
  }
  auto store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(found(store.get(), 0, 3000), 3000);
  EXPECT_EQ(found(store.get(), 3000, 6000), 0);
  ExpectConsistent(*store);
}

TEST_F(GroupStoreTest, EvictKeepsTheRecordsUsedLast) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  GroupStore::Txn txn(store.get());
  auto url = [](char set, int i) { return std::string("http://") + set + ".com/" + std::to_string(i); };
  auto put = [&](GroupStore::Txn& t, char set, uint64_t gid) {
    for (int i = 0; i < 10; ++i) {
      auto p = t.MutablePage(url(set, i));
      ASSERT_TRUE(p.ok());
      (*p)->set_group(gid);
    }
  };
  put(txn, 'a', 1);
  ASSERT_TRUE(txn.Commit(/*durable=*/false, /*keep_cache=*/true).ok());
  put(txn, 'b', 1);
  ASSERT_TRUE(txn.Commit(false, true).ok());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(txn.FindPage(url('a', i)).ok());  // a0..a4 used again
  put(txn, 'c', 1);
  ASSERT_TRUE(txn.Commit(false, true).ok());
  EXPECT_EQ(txn.cached(), 30u);

  // Changes pending: nothing may go.
  ASSERT_TRUE(txn.MutablePage(url('d', 0)).ok());
  EXPECT_EQ(txn.Evict(0).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(txn.Commit(false, true).ok());  // d0 joins the last-used records
  EXPECT_TRUE(txn.Evict(100).ok());
  EXPECT_EQ(txn.cached(), 31u);
  // Room for 20: the 16 used in the last two Commits stay (the 10 b's and a5..a9 would pass it).
  EXPECT_TRUE(txn.Evict(20).ok());
  EXPECT_EQ(txn.cached(), 16u);

  // Another writer moves every page to group 2: the records the Txn kept still say 1, the ones it
  // dropped are read again.
  GroupStore::Txn other(store.get());
  for (char set : {'a', 'b', 'c'}) put(other, set, 2);
  ASSERT_TRUE(other.Commit(false).ok());
  auto group_of = [&](char set, int i) -> uint64_t {
    auto p = txn.FindPage(url(set, i));
    EXPECT_TRUE(p.ok() && *p != nullptr);
    return p.ok() && *p != nullptr ? (*p)->group() : 0;
  };
  const GroupStore::Txn::ReadStats before = txn.page_reads();
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(group_of('a', i), i < 5 ? 1u : 2u) << i;
    EXPECT_EQ(group_of('b', i), 2u) << i;
    EXPECT_EQ(group_of('c', i), 1u) << i;
  }
  EXPECT_EQ(txn.page_reads().hits - before.hits, 15u);
  EXPECT_EQ(txn.page_reads().reads - before.reads, 15u);

  // The 30 pages just read were last used before the same Commit: they stay or go together.
  ASSERT_TRUE(txn.Commit(false, true).ok());
  EXPECT_TRUE(txn.Evict(30).ok());
  EXPECT_EQ(txn.cached(), 30u);  // d0 went
  EXPECT_TRUE(txn.Evict(29).ok());
  EXPECT_EQ(txn.cached(), 0u);
  EXPECT_EQ(txn.FindPage(url('e', 0)).value(), nullptr);  // never stored: no read
  EXPECT_EQ(txn.page_reads().skipped - before.skipped, 1u);
}

// The Txn's lookup memos (by URL hash and by group id) never answer for another key, nor with a
// record Evict, Discard or a committed delete dropped: a hash that gives every URL the same memo
// entry, groups whose ids share one, lookups after each way records leave the Txn. (With ASan, a
// memo entry left pointing at a dropped record fails here too.)
TEST_F(GroupStoreTest, LookupMemosAnswerOnlyForTheirOwnKeys) {
  auto store = Open([](std::string_view) -> uint64_t { return 7; });
  ASSERT_NE(store, nullptr);
  GroupStore::Txn txn(store.get());
  auto url = [](int i) { return "http://m.com/" + std::to_string(i); };
  constexpr uint64_t kStride = 4096;  // group ids this far apart share a memo entry
  for (uint64_t i = 0; i <= 2 * kStride; ++i) txn.NewGroupId();  // ids 1 .. 2 * kStride + 1
  for (int i = 0; i < 6; ++i) {
    auto p = txn.MutablePage(url(i));
    ASSERT_TRUE(p.ok());
    (*p)->set_group(1 + kStride * static_cast<uint64_t>(i % 3));
    auto g = txn.MutableGroup(1 + kStride * static_cast<uint64_t>(i % 3));
    ASSERT_TRUE(g.ok());
    (*g)->set_winner(url(i % 3));
  }
  auto expect_pages = [&](const char* when) {
    for (int round = 0; round < 2; ++round) {  // each URL right after another, twice
      for (int i = 0; i < 6; ++i) {
        auto p = txn.FindPage(url(i));
        ASSERT_TRUE(p.ok() && *p != nullptr) << when << " " << i;
        EXPECT_EQ((*p)->group(), 1 + kStride * static_cast<uint64_t>(i % 3)) << when << " " << i;
        auto cg = txn.ContentGroupOf(url(i));
        ASSERT_TRUE(cg.ok());
        EXPECT_EQ(*cg, 0u) << when << " " << i;  // no signature
      }
      for (int j = 0; j < 3; ++j) {
        auto g = txn.FindGroup(1 + kStride * static_cast<uint64_t>(j));
        ASSERT_TRUE(g.ok() && *g != nullptr) << when << " " << j;
        EXPECT_EQ((*g)->winner(), url(j)) << when << " " << j;
      }
    }
    auto absent = txn.FindPage("http://m.com/none");
    ASSERT_TRUE(absent.ok());
    EXPECT_EQ(*absent, nullptr) << when;
  };
  expect_pages("in the Txn");
  ASSERT_TRUE(txn.Commit(/*durable=*/false, /*keep_cache=*/true).ok());
  expect_pages("kept after Commit");
  ASSERT_TRUE(txn.Commit(false, true).ok());
  ASSERT_TRUE(txn.Evict(0).ok());
  EXPECT_EQ(txn.cached(), 0u);
  expect_pages("read again after Evict");
  txn.Discard();
  expect_pages("read again after Discard");

  // A group deleted by a Commit that keeps the cache is read again (absent), not remembered.
  txn.DeleteGroup(1 + kStride);
  ASSERT_TRUE(txn.Commit(false, true).ok());
  auto gone = txn.FindGroup(1 + kStride);
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(*gone, nullptr);
  auto other = txn.FindGroup(1 + 2 * kStride);
  ASSERT_TRUE(other.ok() && *other != nullptr);
  EXPECT_EQ((*other)->winner(), url(2));
}

// ContentGroupOf answers as FindPage would (the group of a page with a signature, else 0) from
// the Txn's records, the store's memory, or, for URLs whose hashes collide, the records: here a
// hash with 5 values makes most URLs collide, found at Open, by a read, or by a Commit.
TEST_F(GroupStoreTest, ContentGroupOfAgreesWithThePageRecords) {
  auto weak = [](std::string_view url) -> uint64_t { return 1 + url.size() % 5; };
  auto url = [](int i) { return "http://c.com/" + std::string(static_cast<size_t>(i % 7), 'x') + std::to_string(i); };
  auto truth = [&](GroupStore* store, int i) -> uint64_t {
    pb::Tier1Page p;
    if (!store->GetPage(url(i), &p).ok()) return 0;
    return p.has_signature() ? p.group() : 0;
  };
  auto expect_agree = [&](GroupStore* store, int n, const char* when) {
    GroupStore::Txn txn(store);
    for (int i = 0; i < n; ++i) {
      auto g = txn.ContentGroupOf(url(i));
      ASSERT_TRUE(g.ok());
      EXPECT_EQ(*g, truth(store, i)) << url(i) << " " << when;
    }
  };
  {
    auto store = Open(weak);
    ASSERT_NE(store, nullptr);
    GroupStore::Txn txn(store.get());
    for (int i = 0; i < 60; ++i) {
      if (i % 4 == 3) continue;  // never stored
      auto p = txn.MutablePage(url(i));
      ASSERT_TRUE(p.ok());
      (*p)->set_group(100 + i / 10);
      (*p)->set_has_signature(i % 4 != 2);  // a redirect or an empty page: 0
      if (i % 20 == 19) {
        ASSERT_TRUE(txn.Commit(false, /*keep_cache=*/true).ok());
      }
    }
    // Inside the Txn: its own records, committed or not.
    for (int i = 0; i < 60; ++i) {
      auto g = txn.ContentGroupOf(url(i));
      ASSERT_TRUE(g.ok());
      EXPECT_EQ(*g, i % 4 == 3 || i % 4 == 2 ? 0u : 100u + i / 10) << url(i);
    }
    ASSERT_TRUE(txn.Commit(false).ok());
    expect_agree(store.get(), 80, "after the commits");
    // A page changes group and loses its content.
    GroupStore::Txn change(store.get());
    auto p = change.MutablePage(url(0));
    ASSERT_TRUE(p.ok());
    (*p)->set_group(7);
    auto q = change.MutablePage(url(1));
    ASSERT_TRUE(q.ok());
    (*q)->set_has_signature(false);
    ASSERT_TRUE(change.Commit(false).ok());
    EXPECT_EQ(truth(store.get(), 0), 7u);
    expect_agree(store.get(), 80, "after a change");
  }
  auto store = Open(weak);
  ASSERT_NE(store, nullptr);
  expect_agree(store.get(), 80, "after reopening");
  // Every one of the 5 hashes is shared: the answer came from the record.
  GroupStore::Txn txn(store.get());
  ASSERT_TRUE(txn.ContentGroupOf(url(0)).ok());
  EXPECT_EQ(txn.page_reads().indexed, 0u);
  EXPECT_EQ(txn.page_reads().reads, 1u);
}

TEST_F(GroupStoreTest, ContentGroupOfReadsNothingWithoutCollisions) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  GroupStore::Txn txn(store.get());
  for (int i = 0; i < 100; ++i) AddPage(txn, 10 + i % 3, "http://d.com/" + std::to_string(i));
  for (int i = 0; i < 100; ++i) {
    auto p = txn.MutablePage("http://d.com/" + std::to_string(i));
    ASSERT_TRUE(p.ok());
    (*p)->set_has_signature(true);
  }
  ASSERT_TRUE(txn.Commit().ok());
  GroupStore::Txn fresh(store.get());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(fresh.ContentGroupOf("http://d.com/" + std::to_string(i)).value(), 10u + i % 3);
  EXPECT_EQ(fresh.ContentGroupOf("http://d.com/none").value(), 0u);
  EXPECT_EQ(fresh.page_reads().indexed, 100u);
  EXPECT_EQ(fresh.page_reads().skipped, 1u);
  EXPECT_EQ(fresh.page_reads().reads, 0u);
}

TEST_F(GroupStoreTest, DeleteGroupCommitsADelete) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  GroupStore::Txn txn(store.get());
  const uint64_t g5 = txn.NewGroupId();
  AddPage(txn, g5, "http://a.com/");
  ASSERT_TRUE(txn.Commit().ok());
  pb::Tier1Group g;
  ASSERT_TRUE(store->GetGroup(g5, &g).ok());
  txn.DeleteGroup(g5);
  txn.RemoveMember(g5, "http://a.com/");
  const uint64_t g6 = txn.NewGroupId();
  AddPage(txn, g6, "http://a.com/");
  ASSERT_TRUE(txn.Commit().ok());
  EXPECT_EQ(store->GetGroup(g5, &g).code(), StatusCode::kNotFound);
  ASSERT_TRUE(store->GetGroup(g6, &g).ok());
  EXPECT_EQ(g.winner(), "http://a.com/");
  ExpectConsistent(*store);
}

// The winner's entry of a kept set is stored empty, so that a group's record holds its winner's
// URL once; every way of reading the record gives the URL back, and a record written with the URL
// (as stores from before hold them) reads the same.
TEST_F(GroupStoreTest, KeptWinnerIsStoredOnce) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  const std::string a = "http://a.com/some/long/path", b = "http://b.com/other";
  uint64_t g = 0;
  {
    GroupStore::Txn txn(store.get());
    g = txn.NewGroupId();
    for (const std::string& url : {a, b}) {
      AddPage(txn, g, url);
      (*txn.MutablePage(url))->set_has_signature(true);
      (*txn.MutablePage(url))->set_kept(true);
    }
    pb::Tier1Group* rec = *txn.MutableGroup(g);
    rec->set_kept_set(true);
    rec->add_kept(a);
    rec->add_kept(b);
    ASSERT_TRUE(txn.Commit().ok());
  }
  std::string raw;
  ASSERT_TRUE(store->rows().Get(store->group_family(), GroupStore::GroupKey(g), "", &raw).ok());
  size_t copies = 0;
  for (size_t at = raw.find(a); at != std::string::npos; at = raw.find(a, at + 1)) ++copies;
  EXPECT_EQ(copies, 1u) << "the winner's URL is stored once";
  auto expect_kept = [&](const pb::Tier1Group& rec, const std::string& how) {
    EXPECT_EQ(rec.winner(), a) << how;
    EXPECT_THAT(rec.kept(), ::testing::ElementsAre(a, b)) << how;
  };
  pb::Tier1Group got;
  ASSERT_TRUE(store->GetGroup(g, &got).ok());
  expect_kept(got, "GetGroup");
  {
    GroupStore::Txn txn(store.get());
    auto rec = txn.FindGroup(g);
    ASSERT_TRUE(rec.ok() && *rec != nullptr);
    expect_kept(**rec, "a Txn's read");
  }
  ExpectConsistent(*store);

  // The record as stores from before wrote it: the winner's URL in full, twice.
  pb::Tier1Group old;
  old.set_winner(a);
  old.set_members(2);
  old.set_kept_set(true);
  old.add_kept(a);
  old.add_kept(b);
  RowBatch batch;
  batch.Put(store->group_family(), GroupStore::GroupKey(g), "", old.SerializeAsString());
  ASSERT_TRUE(store->rows().Write(batch).ok());
  ASSERT_TRUE(store->GetGroup(g, &got).ok());
  expect_kept(got, "a record from before");
  ExpectConsistent(*store);
}

// A deleted page record is gone from the Txn at once and from the store at Commit; its URL's
// content group is 0 from then on (in the Txn, from the store's memory, after a reopen), and the
// URL can be recorded again, from an empty record.
TEST_F(GroupStoreTest, DeletePageCommitsADeleteAndTheUrlCanComeBack) {
  uint64_t g = 0;
  pb::Tier1Page p;
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    GroupStore::Txn txn(store.get());  // kept as a cache across its commits, as Tier 1 keeps it
    g = txn.NewGroupId();
    for (const char* url : {"http://a.com/", "http://b.com/", "http://c.com/"}) {
      AddPage(txn, g, url);
      (*txn.MutablePage(url))->set_has_signature(true);
    }
    ASSERT_TRUE(txn.Commit(true, /*keep_cache=*/true).ok());

    ASSERT_TRUE(txn.DeletePage("http://a.com/").ok());
    ASSERT_TRUE(txn.DeletePage("http://never.com/").ok());  // no record: nothing to do
    txn.RemoveMember(g, "http://a.com/");
    (*txn.MutableGroup(g))->set_members(2);
    (*txn.MutableGroup(g))->set_winner("http://b.com/");
    EXPECT_EQ(txn.FindPage("http://a.com/").value(), nullptr);
    EXPECT_EQ(txn.ContentGroupOf("http://a.com/").value(), 0u);
    EXPECT_TRUE(store->GetPage("http://a.com/", &p).ok()) << "nothing before Commit";
    ASSERT_TRUE(txn.Commit(true, /*keep_cache=*/true).ok());
    EXPECT_EQ(store->GetPage("http://a.com/", &p).code(), StatusCode::kNotFound);
    EXPECT_EQ(store->GetPage("http://never.com/", &p).code(), StatusCode::kNotFound);
    EXPECT_EQ(txn.FindPage("http://a.com/").value(), nullptr);
    GroupStore::Txn fresh(store.get());
    EXPECT_EQ(fresh.ContentGroupOf("http://a.com/").value(), 0u);
    EXPECT_EQ(fresh.FindPage("http://a.com/").value(), nullptr);
    EXPECT_EQ(fresh.ContentGroupOf("http://b.com/").value(), g);
    CheckReport r;
    ExpectConsistent(*store, &r);
    EXPECT_EQ(r.pages, 2u);

    // Deleted and made again in one Txn: the record comes back empty, and is stored.
    ASSERT_TRUE(txn.DeletePage("http://c.com/").ok());
    auto back = txn.MutablePage("http://c.com/");
    ASSERT_TRUE(back.ok());
    EXPECT_EQ((*back)->group(), 0u);
    EXPECT_FALSE((*back)->has_signature());
    (*back)->set_group(g);
    (*back)->set_crawled(true);
    (*back)->set_has_signature(true);
    (*back)->set_popularity(5);
    ASSERT_TRUE(txn.Commit(true, /*keep_cache=*/true).ok());
    ASSERT_TRUE(store->GetPage("http://c.com/", &p).ok());
    EXPECT_EQ(p.popularity(), 5);
    // A URL deleted earlier recorded again.
    AddPage(txn, g, "http://a.com/");
    ASSERT_TRUE(txn.Commit(true, /*keep_cache=*/true).ok());
    ASSERT_TRUE(store->GetPage("http://a.com/", &p).ok());
    EXPECT_EQ(p.group(), g);
    ASSERT_TRUE(txn.DeletePage("http://a.com/").ok());
    txn.RemoveMember(g, "http://a.com/");
    (*txn.MutableGroup(g))->set_members(2);
    ASSERT_TRUE(txn.Commit(true, /*keep_cache=*/true).ok());
    ExpectConsistent(*store);
  }
  auto store = Open();
  ASSERT_NE(store, nullptr);
  GroupStore::Txn txn(store.get());
  EXPECT_EQ(txn.ContentGroupOf("http://a.com/").value(), 0u);
  EXPECT_EQ(txn.FindPage("http://a.com/").value(), nullptr);
  EXPECT_EQ(txn.page_reads().reads, 0u) << "a URL deleted before the store opened is not known to it";
  EXPECT_EQ(txn.ContentGroupOf("http://c.com/").value(), g);
  CheckReport r;
  ExpectConsistent(*store, &r);
  EXPECT_EQ(r.pages, 2u);
}

TEST_F(GroupStoreTest, RedirectIndexAcrossCommitsFailuresAndReopen) {
  auto redirectors = [](GroupStore* store, const std::string& target) {
    GroupStore::Txn txn(store);
    std::vector<std::string> out;
    EXPECT_TRUE(txn.Redirectors(target, &out).ok());
    return out;
  };
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    GroupStore::Txn txn(store.get());
    txn.AddRedirect("http://t.com/", "http://r1.com/");
    txn.AddRedirect("http://t.com/", "http://r2.com/");
    txn.AddRedirect("http://u.com/", "http://r3.com/");
    ASSERT_TRUE(txn.Commit().ok());
    EXPECT_EQ(redirectors(store.get(), "http://t.com/"), (Urls{"http://r1.com/", "http://r2.com/"}));
    EXPECT_EQ(redirectors(store.get(), "http://u.com/"), (Urls{"http://r3.com/"}));
    // The last source of u goes; one of t's goes.
    txn.RemoveRedirect("http://u.com/", "http://r3.com/");
    txn.RemoveRedirect("http://t.com/", "http://r1.com/");
    ASSERT_TRUE(txn.Commit().ok());
    EXPECT_TRUE(redirectors(store.get(), "http://u.com/").empty());
    EXPECT_EQ(redirectors(store.get(), "http://t.com/"), (Urls{"http://r2.com/"}));
    // Added and removed in one Txn: nothing stays. A removal nobody had: still nothing. A target
    // losing one source and gaining another keeps being redirected to.
    txn.AddRedirect("http://w.com/", "http://r6.com/");
    txn.RemoveRedirect("http://w.com/", "http://r6.com/");
    txn.RemoveRedirect("http://x.com/", "http://r7.com/");
    txn.RemoveRedirect("http://t.com/", "http://r2.com/");
    txn.AddRedirect("http://t.com/", "http://r8.com/");
    ASSERT_TRUE(txn.Commit().ok());
    EXPECT_TRUE(redirectors(store.get(), "http://w.com/").empty());
    EXPECT_TRUE(redirectors(store.get(), "http://x.com/").empty());
    EXPECT_EQ(redirectors(store.get(), "http://t.com/"), (Urls{"http://r8.com/"}));
    txn.RemoveRedirect("http://t.com/", "http://r8.com/");
    txn.AddRedirect("http://t.com/", "http://r2.com/");
    ASSERT_TRUE(txn.Commit().ok());
    EXPECT_EQ(redirectors(store.get(), "http://t.com/"), (Urls{"http://r2.com/"}));
    // A failed commit adds nothing.
    txn.AddRedirect("http://v.com/", "http://r4.com/");
    txn.AddRedirect("http://u.com/", "http://r4.com/");
    txn.RemoveRedirect("http://t.com/", "http://r2.com/");
    env_.fail_appends = true;
    EXPECT_EQ(txn.Commit().code(), StatusCode::kIoError);
    env_.fail_appends = false;
    EXPECT_TRUE(redirectors(store.get(), "http://v.com/").empty());
    EXPECT_TRUE(redirectors(store.get(), "http://u.com/").empty());
    EXPECT_EQ(redirectors(store.get(), "http://t.com/"), (Urls{"http://r2.com/"}));
    // Re-added after being emptied.
    txn.AddRedirect("http://u.com/", "http://r5.com/");
    ASSERT_TRUE(txn.Commit().ok());
    EXPECT_EQ(redirectors(store.get(), "http://u.com/"), (Urls{"http://r5.com/"}));
  }
  auto store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(redirectors(store.get(), "http://t.com/"), (Urls{"http://r2.com/"}));
  EXPECT_EQ(redirectors(store.get(), "http://u.com/"), (Urls{"http://r5.com/"}));
  EXPECT_TRUE(redirectors(store.get(), "http://v.com/").empty());
}

// A Txn keeps the member lists it read (or made, for a new group) across kept Commits: each
// list must equal the store's after every Commit, a failed one and an Evict included.
TEST_F(GroupStoreTest, KeptMemberListsFollowEveryCommit) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  GroupStore::Txn txn(store.get());
  auto same = [&](uint64_t g) {
    std::vector<std::string> kept, committed;
    EXPECT_TRUE(txn.Members(g, &kept).ok());
    EXPECT_TRUE(store->Members(g, &committed).ok());
    EXPECT_EQ(kept, committed) << "group " << g;
    return kept;
  };
  const uint64_t g1 = txn.NewGroupId();
  txn.AddMember(g1, "http://b.com/");
  txn.AddMember(g1, "http://d.com/");
  ASSERT_TRUE(txn.Commit(true, /*keep_cache=*/true).ok());
  EXPECT_EQ(same(g1), (Urls{"http://b.com/", "http://d.com/"}));  // a new group's list, made by Commit
  // Before, between and after the kept URLs; a removal; a URL added and removed in one Txn.
  txn.AddMember(g1, "http://a.com/");
  txn.AddMember(g1, "http://c.com/");
  txn.AddMember(g1, "http://e.com/");
  txn.RemoveMember(g1, "http://d.com/");
  txn.AddMember(g1, "http://x.com/");
  txn.RemoveMember(g1, "http://x.com/");
  ASSERT_TRUE(txn.Commit(true, true).ok());
  EXPECT_EQ(same(g1), (Urls{"http://a.com/", "http://b.com/", "http://c.com/", "http://e.com/"}));
  // A failed Commit keeps nothing of its changes.
  txn.RemoveMember(g1, "http://a.com/");
  txn.AddMember(g1, "http://f.com/");
  env_.fail_appends = true;
  EXPECT_EQ(txn.Commit(true, true).code(), StatusCode::kIoError);
  env_.fail_appends = false;
  EXPECT_EQ(same(g1), (Urls{"http://a.com/", "http://b.com/", "http://c.com/", "http://e.com/"}));
  // A group emptied, then one read after many Commits and an Evict.
  for (const char* u : {"http://a.com/", "http://b.com/", "http://c.com/", "http://e.com/"}) txn.RemoveMember(g1, u);
  ASSERT_TRUE(txn.Commit(true, true).ok());
  EXPECT_TRUE(same(g1).empty());
  txn.AddMember(g1, "http://z.com/");
  ASSERT_TRUE(txn.Commit(true, true).ok());
  for (int i = 0; i < 70; ++i) ASSERT_TRUE(txn.Commit(true, true).ok());
  ASSERT_TRUE(txn.Evict(0).ok());
  EXPECT_EQ(same(g1), (Urls{"http://z.com/"}));
}

// Records Evict takes out of the decoded cache stay packed: read back without the store, equal to
// what it holds, and never stale: a change made after packing (a page, a member list, a deleted
// group) is what the next lookup sees. Past the packed bound they are read from the store again.
TEST_F(GroupStoreTest, EvictedRecordsStayPackedAndAnswerAsTheStore) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  GroupStore::Txn txn(store.get());
  auto url = [](int i) { return "http://p.com/" + std::to_string(i); };
  std::vector<uint64_t> gids;
  for (int g = 0; g < 5; ++g) gids.push_back(txn.NewGroupId());
  for (int i = 0; i < 50; ++i) AddPage(txn, gids[i % 5], url(i));
  ASSERT_TRUE(txn.Commit(/*durable=*/false, /*keep_cache=*/true).ok());
  auto expect_as_store = [&](const char* when) {
    for (int i = 0; i < 50; ++i) {
      pb::Tier1Page want;
      ASSERT_TRUE(store->GetPage(url(i), &want).ok()) << when << " " << i;
      auto got = txn.FindPage(url(i));
      ASSERT_TRUE(got.ok() && *got != nullptr) << when << " " << i;
      EXPECT_EQ((*got)->SerializeAsString(), want.SerializeAsString()) << when << " " << i;
    }
    for (uint64_t g : gids) {
      pb::Tier1Group want;
      const Status w = store->GetGroup(g, &want);
      auto got = txn.FindGroup(g);
      ASSERT_TRUE(got.ok()) << when;
      if (w.code() == StatusCode::kNotFound) {
        EXPECT_EQ(*got, nullptr) << when << " group " << g;
        continue;
      }
      ASSERT_NE(*got, nullptr) << when << " group " << g;
      EXPECT_EQ((*got)->SerializeAsString(), want.SerializeAsString()) << when << " group " << g;
      Urls kept, committed;
      ASSERT_TRUE(txn.Members(g, &kept).ok());
      ASSERT_TRUE(store->Members(g, &committed).ok());
      EXPECT_EQ(kept, committed) << when << " group " << g;
    }
  };
  constexpr size_t kRoom = 1 << 20;
  ASSERT_TRUE(txn.Evict(0, kRoom).ok());
  EXPECT_EQ(txn.cached(), 0u);
  EXPECT_EQ(txn.packed(), 50u + 5u + 5u);  // pages, groups, member lists
  EXPECT_GT(txn.packed_bytes(), 0u);
  const GroupStore::Txn::ReadStats pages_before = txn.page_reads(), groups_before = txn.group_reads(),
                                   members_before = txn.member_reads();
  expect_as_store("unpacked");
  EXPECT_EQ(txn.page_reads().reads, pages_before.reads) << "a packed page is not read from the store";
  EXPECT_EQ(txn.page_reads().unpacked - pages_before.unpacked, 50u);
  EXPECT_EQ(txn.group_reads().reads, groups_before.reads);
  EXPECT_EQ(txn.group_reads().unpacked - groups_before.unpacked, 5u);
  EXPECT_EQ(txn.member_reads().reads, members_before.reads);
  EXPECT_EQ(txn.member_reads().unpacked - members_before.unpacked, 5u);
  EXPECT_EQ(txn.packed(), 0u);
  EXPECT_EQ(txn.packed_bytes(), 0u);

  // Changes after packing: a page moved, members added and removed, a group deleted (without a
  // read first), each while its record or list is packed.
  ASSERT_TRUE(txn.Commit(false, true).ok());
  ASSERT_TRUE(txn.Evict(0, kRoom).ok());
  auto p0 = txn.MutablePage(url(0));
  ASSERT_TRUE(p0.ok());
  (*p0)->set_group(gids[1]);
  txn.RemoveMember(gids[0], url(0));
  txn.AddMember(gids[1], url(0));
  txn.AddMember(gids[2], "http://p.com/new");
  for (int i = 4; i < 50; i += 5) {
    ASSERT_TRUE(txn.DeletePage(url(i)).ok());
    txn.RemoveMember(gids[4], url(i));
  }
  txn.DeleteGroup(gids[4]);
  ASSERT_TRUE(txn.Commit(false, true).ok());
  ASSERT_TRUE(txn.Evict(0, kRoom).ok());
  for (int i = 4; i < 50; i += 5) {
    auto gone = txn.FindPage(url(i));
    ASSERT_TRUE(gone.ok());
    EXPECT_EQ(*gone, nullptr) << i;
  }
  for (int i = 0; i < 50; i += 5) {  // the others, as the store has them
    auto p = txn.FindPage(url(i));
    ASSERT_TRUE(p.ok() && *p != nullptr);
    EXPECT_EQ((*p)->group(), i == 0 ? gids[1] : gids[0]) << i;
  }
  ASSERT_TRUE(txn.Commit(false, true).ok());
  ASSERT_TRUE(txn.Evict(0, kRoom).ok());
  auto expect_live = [&](const char* when) {
    for (int i = 0; i < 50; ++i) {
      if (i % 5 == 4) continue;
      pb::Tier1Page want;
      ASSERT_TRUE(store->GetPage(url(i), &want).ok()) << when << " " << i;
    }
  };
  expect_live("after the changes");
  auto deleted = txn.FindGroup(gids[4]);
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, nullptr);
  // The lists changed while packed took the changes: none is scanned from the store again.
  const uint64_t member_scans = txn.member_reads().reads;
  for (uint64_t g : {gids[0], gids[1], gids[2], gids[3]}) {
    Urls kept, committed;
    ASSERT_TRUE(txn.Members(g, &kept).ok());
    ASSERT_TRUE(store->Members(g, &committed).ok());
    EXPECT_EQ(kept, committed) << "group " << g;
  }
  EXPECT_EQ(txn.member_reads().reads, member_scans);

  // A bound too small for any: Evict drops them, and lookups read the store.
  ASSERT_TRUE(txn.Commit(false, true).ok());
  ASSERT_TRUE(txn.Evict(0, 1).ok());
  EXPECT_EQ(txn.packed(), 0u);
  EXPECT_EQ(txn.packed_bytes(), 0u);
  const uint64_t reads_before = txn.page_reads().reads;
  auto p1 = txn.FindPage(url(1));
  ASSERT_TRUE(p1.ok() && *p1 != nullptr);
  EXPECT_EQ((*p1)->group(), gids[1]);
  EXPECT_EQ(txn.page_reads().reads, reads_before + 1);
  Urls members;
  ASSERT_TRUE(txn.Members(gids[1], &members).ok());
  EXPECT_EQ(txn.member_reads().reads, member_scans + 1);
  EXPECT_EQ(members.size(), 11u);  // its ten and url(0)
}

// Packed pages whose URLs share a hash: one is kept per hash, and a lookup never takes another
// URL's record for its own.
TEST_F(GroupStoreTest, PackedPagesNeverAnswerForAnotherUrlWithTheSameHash) {
  auto store = Open([](std::string_view) -> uint64_t { return 7; });
  ASSERT_NE(store, nullptr);
  GroupStore::Txn txn(store.get());
  auto url = [](int i) { return "http://h.com/" + std::to_string(i); };
  for (int i = 0; i < 6; ++i) AddPage(txn, txn.NewGroupId(), url(i));
  ASSERT_TRUE(txn.Commit(false, true).ok());
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(txn.Commit(false, true).ok());
    ASSERT_TRUE(txn.Evict(0, 1 << 20).ok());
    for (int i = 0; i < 6; ++i) {
      pb::Tier1Page want;
      ASSERT_TRUE(store->GetPage(url(i), &want).ok());
      auto got = txn.FindPage(url(i));
      ASSERT_TRUE(got.ok() && *got != nullptr) << round << " " << i;
      EXPECT_EQ((*got)->group(), want.group()) << round << " " << i;
    }
  }
  EXPECT_GT(txn.page_reads().unpacked, 0u);
}

TEST_F(GroupStoreTest, GroupIdsAreDistinctAcrossTxnsAndReopen) {
  std::set<uint64_t> ids;
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    for (int t = 0; t < 3; ++t) {
      GroupStore::Txn txn(store.get());
      for (int k = 0; k < 4; ++k) {
        const uint64_t id = txn.NewGroupId();
        EXPECT_NE(id, 0u);
        EXPECT_TRUE(ids.insert(id).second) << id;
        AddPage(txn, id, "http://p" + std::to_string(id) + ".com/");
      }
      ASSERT_TRUE(txn.Commit().ok());
    }
    // A Txn that reserves ids and is dropped does not burn committed ones.
    GroupStore::Txn dropped(store.get());
    EXPECT_EQ(ids.count(dropped.NewGroupId()), 0u);
  }
  auto store = Open();
  ASSERT_NE(store, nullptr);
  GroupStore::Txn txn(store.get());
  for (int k = 0; k < 4; ++k) EXPECT_TRUE(ids.insert(txn.NewGroupId()).second);
  ASSERT_TRUE(txn.Commit().ok());
  GroupStore::Txn next(store.get());
  EXPECT_TRUE(ids.insert(next.NewGroupId()).second);
  ExpectConsistent(*store);
}

TEST_F(GroupStoreTest, FailedCommitIsAtomic) {
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    GroupStore::Txn txn(store.get());
    const uint64_t g1 = txn.NewGroupId();
    AddPage(txn, g1, "http://a.com/");
    AddPage(txn, g1, "http://b.com/");
    ASSERT_TRUE(txn.Commit().ok());
    ExpectConsistent(*store);

    // A consistent change (b leaves for a new group) whose write fails.
    const uint64_t g2 = txn.NewGroupId();
    auto b = txn.MutablePage("http://b.com/");
    ASSERT_TRUE(b.ok());
    (*b)->set_group(g2);
    txn.RemoveMember(g1, "http://b.com/");
    auto og = txn.MutableGroup(g1);
    ASSERT_TRUE(og.ok());
    (*og)->set_members(1);
    auto ng = txn.MutableGroup(g2);
    ASSERT_TRUE(ng.ok());
    (*ng)->set_members(1);
    (*ng)->set_winner("http://b.com/");
    txn.AddMember(g2, "http://b.com/");
    txn.AddCounter("moves", 1);
    env_.fail_appends = true;
    const Status s = txn.Commit();
    env_.fail_appends = false;
    EXPECT_EQ(s.code(), StatusCode::kIoError) << s.ToString();
    EXPECT_TRUE(txn.empty());
    // Nothing applied, in memory or on disk.
    pb::Tier1Page p;
    ASSERT_TRUE(store->GetPage("http://b.com/", &p).ok());
    EXPECT_EQ(p.group(), g1);
    EXPECT_EQ(store->rows().Counter("moves"), 0);
    EXPECT_EQ(store->rows().Counter("next_group"), 1);
    ExpectConsistent(*store);
  }
  auto store = Open();
  ASSERT_NE(store, nullptr);
  CheckReport r;
  ExpectConsistent(*store, &r);
  EXPECT_EQ(r.pages, 2u);
  EXPECT_EQ(r.groups, 1u);
  EXPECT_EQ(r.multi_groups, 1u);
  std::vector<std::string> members;
  ASSERT_TRUE(store->Members(1, &members).ok());
  EXPECT_EQ(members, (Urls{"http://a.com/", "http://b.com/"}));
  EXPECT_EQ(store->rows().Counter("next_group"), 1);
}

// The same through Tier 1: a batch whose commit fails leaves the previous state, whole.
pb::PageSignature Sig(const std::string& url, uint64_t lo, uint64_t hi) {
  pb::PageSignature s;
  s.set_url(url);
  for (uint64_t x = lo; x < hi; ++x) s.add_shingles(x);
  s.set_content_digest(std::to_string(lo) + ":" + std::to_string(hi));
  return s;
}

TEST_F(GroupStoreTest, FailedTier1ApplyLeavesThePreviousState) {
  FakeSource source;
  std::vector<pb::PageSignature> sigs = {Sig("http://a.com/", 0, 100), Sig("http://b.com/", 1, 101),
                                         Sig("http://c.com/", 500, 600)};
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    Tier1 t1(store.get(), &source, Tier1Options());
    std::vector<PageUpdate> batch;
    for (const auto& s : sigs) batch.push_back(Update(s.url(), &s, "", 0, 1));
    std::vector<Classification> classes;
    ASSERT_TRUE(t1.Classify(batch, &classes).ok());
    Tier2Matches m;
    m.in_batch.push_back({0, 1, 99.0 / 101.0});
    ApplyOutcome out;
    ASSERT_TRUE(t1.Apply(batch, classes, m, nullptr, &out).ok());
    for (const auto& s : sigs) source.sigs[s.url()] = s;
    ExpectConsistent(*store);

    // c now duplicates a, and a redirect to b arrives: the commit fails.
    const pb::PageSignature c2 = Sig("http://c.com/", 2, 102);
    batch = {Update("http://c.com/", &c2, "", 0, 1),
             Update("http://r.com/", nullptr, "http://b.com/")};
    ASSERT_TRUE(t1.Classify(batch, &classes).ok());
    ASSERT_EQ(classes[0], Classification::kTier2);
    m = Tier2Matches();
    m.resident.push_back({0, "http://a.com/", 98.0 / 102.0});
    m.resident.push_back({0, "http://b.com/", 99.0 / 101.0});
    env_.fail_appends = true;
    const Status s = t1.Apply(batch, classes, m, nullptr, &out);
    env_.fail_appends = false;
    EXPECT_EQ(s.code(), StatusCode::kIoError) << s.ToString();
    ExpectConsistent(*store);
  }
  auto store = Open();
  ASSERT_NE(store, nullptr);
  CheckReport r;
  ExpectConsistent(*store, &r);
  EXPECT_EQ(r.pages, 3u);
  EXPECT_EQ(r.groups, 2u);
  EXPECT_EQ(r.redirects, 0u);
  pb::Tier1Page a, c;
  ASSERT_TRUE(store->GetPage("http://a.com/", &a).ok());
  ASSERT_TRUE(store->GetPage("http://c.com/", &c).ok());
  EXPECT_NE(a.group(), c.group());
  EXPECT_EQ(c.content_digest(), "500:600");
  // The reopened store takes the batch again.
  Tier1 t1(store.get(), &source, Tier1Options());
  const pb::PageSignature c2 = Sig("http://c.com/", 2, 102);
  std::vector<PageUpdate> batch = {Update("http://c.com/", &c2, "", 0, 1)};
  std::vector<Classification> classes;
  ASSERT_TRUE(t1.Classify(batch, &classes).ok());
  Tier2Matches m;
  m.resident.push_back({0, "http://a.com/", 98.0 / 102.0});
  ApplyOutcome out;
  ASSERT_TRUE(t1.Apply(batch, classes, m, nullptr, &out).ok());
  ExpectConsistent(*store, &r);
  EXPECT_EQ(r.groups, 1u);
}

// Tier 1's keep rule assumes a redirecting page shares its target's group: CheckStore names a
// redirector in another group, with both URLs and both groups.
TEST_F(GroupStoreTest, CheckFindsARedirectorOutsideItsTargetsGroup) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  const std::string t = "http://t.com/", r = "http://r.com/", s = "http://s.com/";
  uint64_t g1 = 0, g2 = 0;
  {
    GroupStore::Txn txn(store.get());
    g1 = txn.NewGroupId();
    g2 = txn.NewGroupId();
    AddPage(txn, g1, t);
    AddPage(txn, g1, s);
    AddPage(txn, g2, r);
    for (const std::string& source : {r, s}) {
      auto page = txn.MutablePage(source);
      ASSERT_TRUE(page.ok());
      (*page)->set_redirect_to(t);
      txn.AddRedirect(t, source);
    }
    ASSERT_TRUE(txn.Commit().ok());
  }
  CheckReport report;
  ASSERT_TRUE(CheckStore(*store, &report).ok());
  EXPECT_EQ(report.redirects, 2u);
  ASSERT_EQ(report.violation_count, 1u);
  ASSERT_EQ(report.violations.size(), 1u);
  EXPECT_EQ(report.violations[0], "page " + r + " (group " + std::to_string(g2) + ") redirects to " + t +
                                      ", which is in group " + std::to_string(g1));
  // In its target's group, it passes.
  {
    GroupStore::Txn txn(store.get());
    auto page = txn.MutablePage(r);
    ASSERT_TRUE(page.ok());
    (*page)->set_group(g1);
    txn.RemoveMember(g2, r);
    txn.DeleteGroup(g2);
    txn.AddMember(g1, r);
    auto group = txn.MutableGroup(g1);
    ASSERT_TRUE(group.ok());
    (*group)->set_members(3);
    ASSERT_TRUE(txn.Commit().ok());
  }
  ExpectConsistent(*store);
}

}  // namespace
}  // namespace neardup::tier1
