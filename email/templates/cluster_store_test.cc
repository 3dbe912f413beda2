#include "email/templates/cluster_store.h"

#include <gtest/gtest.h>
#include <leveldb/helpers/memenv.h>

#include <chrono>
#include <future>
#include <thread>

#include "storage/fault_env.h"
#include "testing/temp_dir.h"

namespace neardup::email {
namespace {

pb::StoredEmail Email(const std::string& id, uint64_t recipient) {
  pb::StoredEmail e;
  e.set_id(id);
  e.set_recipient(recipient);
  e.set_subject("s");
  return e;
}

class ClusterStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<ClusterStore> Open(uint32_t s = 5, leveldb::Env* env = nullptr) {
    ClusterStoreOptions o;
    o.env = env;
    o.sync = env != nullptr;
    o.path = dir_.File("store");
    o.clock = &clock_;
    o.max_emails_per_row = s;
    o.email_ttl_ms = 1000;
    o.template_ttl_ms = 5000;
    o.ranges = {{0, 1ull << 63, 1}, {1ull << 63, UINT64_MAX, 1}};
    auto st = ClusterStore::Open(o);
    EXPECT_TRUE(st.ok()) << st.status().message();
    return std::move(*st);
  }
  neardup::test::TempDir dir_;
  ManualClock clock_{1'000'000};
};

TEST_F(ClusterStoreTest, CountsUniqueRecipientsAndCapsTheRow) {
  auto store = Open(4);
  auto c = store->AddEmail(7, Email("a", 1));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->stored);
  EXPECT_EQ(c->emails, 1u);
  EXPECT_EQ(c->users, 1u);
  ASSERT_TRUE(store->AddEmail(7, Email("b", 1)).ok());
  ASSERT_TRUE(store->AddEmail(7, Email("c", 2)).ok());
  c = store->AddEmail(7, Email("d", 3));
  EXPECT_EQ(c->emails, 4u);
  EXPECT_EQ(c->users, 3u);
  c = store->AddEmail(7, Email("e", 4));  // S = 4: not stored
  EXPECT_FALSE(c->stored);
  EXPECT_EQ(c->emails, 4u);
  std::vector<pb::StoredEmail> emails;
  ASSERT_TRUE(store->ReadEmails(7, &emails).ok());
  ASSERT_EQ(emails.size(), 4u);
  EXPECT_EQ(emails[0].stored_ms(), 1'000'000);
  EXPECT_EQ(store->Counts(8).emails, 0u);
  EXPECT_EQ(store->ShardOf(7), 0u);
  EXPECT_EQ(store->ShardOf(UINT64_MAX - 1), 1u);
}

TEST_F(ClusterStoreTest, TtlExpiryDeletesFromDiskAndMemory) {
  auto store = Open();
  ASSERT_TRUE(store->AddEmail(7, Email("a", 1)).ok());
  clock_.Advance(600);
  ASSERT_TRUE(store->AddEmail(7, Email("b", 2)).ok());
  clock_.Advance(500);  // "a" and its recipient expired, "b" not
  RowCounts c = store->Counts(7);
  EXPECT_EQ(c.emails, 1u);
  EXPECT_EQ(c.users, 1u);
  auto deleted = store->Expire();
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, 2u);  // the email cell and the user cell
  std::vector<pb::StoredEmail> emails;
  ASSERT_TRUE(store->ReadEmails(7, &emails).ok());
  ASSERT_EQ(emails.size(), 1u);
  EXPECT_EQ(emails[0].id(), "b");
  clock_.Advance(1000);
  ASSERT_TRUE(store->Expire().ok());
  EXPECT_EQ(store->Rows(), 0u);
}

TEST_F(ClusterStoreTest, TemplatesReplaceAtomicallyAndExpire) {
  auto store = Open();
  pb::EmailTemplate t1, t2;
  t1.set_id(1);
  t1.set_row(7);
  t2.set_id(2);
  t2.set_row(7);
  ASSERT_TRUE(store->WriteTemplates(7, {t1, t2}, 3).ok());
  EXPECT_TRUE(store->Counts(7).has_template);
  EXPECT_EQ(store->Counts(7).emails_at_formation, 3u);
  ASSERT_TRUE(store->WriteTemplates(7, {t2}, 4).ok());
  std::vector<pb::EmailTemplate> ts;
  ASSERT_TRUE(store->ReadTemplates(7, &ts).ok());
  ASSERT_EQ(ts.size(), 1u);
  EXPECT_EQ(ts[0].id(), 2u);
  clock_.Advance(5000);
  EXPECT_FALSE(store->Counts(7).has_template);
  ASSERT_TRUE(store->ReadTemplates(7, &ts).ok());
  EXPECT_TRUE(ts.empty());
}

TEST_F(ClusterStoreTest, HotStateIsRebuiltOnOpen) {
  {
    auto store = Open();
    ASSERT_TRUE(store->AddEmail(7, Email("a", 1)).ok());
    ASSERT_TRUE(store->AddEmail(7, Email("b", 2)).ok());
    pb::EmailTemplate t;
    t.set_id(1);
    t.set_emails(2);
    t.set_created_ms(clock_.NowMillis());
    ASSERT_TRUE(store->WriteTemplates(7, {t}, 2).ok());
  }
  auto store = Open();
  RowCounts c = store->Counts(7);
  EXPECT_EQ(c.emails, 2u);
  EXPECT_EQ(c.users, 2u);
  EXPECT_TRUE(c.has_template);
  EXPECT_EQ(c.emails_at_formation, 2u);
}

TEST_F(ClusterStoreTest, AddEmailsWritesOneBatchWithCountsInOrder) {
  auto store = Open(4);
  std::vector<pb::StoredEmail> emails;
  for (char c = '0'; c < '6'; ++c) emails.push_back(Email(std::string{'e', c}, static_cast<uint64_t>((c - '0') % 3)));
  std::vector<ClusterStore::NewEmail> items;
  for (int i = 0; i < 5; ++i) items.push_back({7, &emails[static_cast<size_t>(i)]});
  items.push_back({UINT64_MAX - 1, &emails[5]});  // another shard
  std::vector<RowCounts> counts;
  ASSERT_TRUE(store->AddEmails(items, &counts).ok());
  ASSERT_EQ(counts.size(), 6u);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(counts[i].stored);
    EXPECT_EQ(counts[i].emails, i + 1);
    EXPECT_EQ(counts[i].users, std::min(i + 1, 3u));
  }
  EXPECT_FALSE(counts[4].stored);  // S = 4
  EXPECT_EQ(counts[4].emails, 4u);
  EXPECT_TRUE(counts[5].stored);
  EXPECT_EQ(counts[5].emails, 1u);
  EXPECT_EQ(store->EmailsStored(), 5);
  std::vector<pb::StoredEmail> read;
  ASSERT_TRUE(store->ReadEmails(7, &read).ok());
  ASSERT_EQ(read.size(), 4u);
  for (const auto& e : read) {
    EXPECT_EQ(e.stored_ms(), 1'000'000);
    EXPECT_EQ(e.subject(), "s");
  }
  ASSERT_TRUE(store->ReadEmails(UINT64_MAX - 1, &read).ok());
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].id(), "e5");
}

TEST_F(ClusterStoreTest, AReadWaitsForAnEmailCountedButNotYetWritten) {
  // One thread's email is in the row's counts while its write is still in flight (held in the
  // log's fsync); a formation reading the row then must see it, not the row without it.
  std::unique_ptr<leveldb::Env> mem(leveldb::NewMemEnv(leveldb::Env::Default()));
  FaultyEnv env(mem.get());
  auto store = Open(5, &env);
  env.hold_syncs = true;
  auto writer = std::async(std::launch::async, [&] { return store->AddEmail(7, Email("a", 1)); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (store->Counts(7).emails == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(store->Counts(7).emails, 1u);
  std::vector<pb::StoredEmail> read;
  auto reader = std::async(std::launch::async, [&] { return store->ReadEmails(7, &read); });
  EXPECT_EQ(reader.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  // Another row is not held up.
  std::vector<pb::StoredEmail> other;
  ASSERT_TRUE(store->ReadEmails(8, &other).ok());
  EXPECT_TRUE(other.empty());
  env.hold_syncs = false;
  ASSERT_TRUE(writer.get().ok());
  ASSERT_TRUE(reader.get().ok());
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].id(), "a");
}

TEST_F(ClusterStoreTest, AFailedWriteReleasesTheRowsReaders) {
  std::unique_ptr<leveldb::Env> mem(leveldb::NewMemEnv(leveldb::Env::Default()));
  FaultyEnv env(mem.get());
  auto store = Open(5, &env);
  env.fail_appends = true;
  EXPECT_FALSE(store->AddEmail(7, Email("a", 1)).ok());
  EXPECT_EQ(store->Counts(7).emails, 0u);
  // The row has no write in flight: the read does not wait (it reports the store's failure or
  // nothing, but returns).
  std::vector<pb::StoredEmail> read;
  auto reader = std::async(std::launch::async, [&] { return store->ReadEmails(7, &read); });
  EXPECT_EQ(reader.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(read.empty());
}

}  // namespace
}  // namespace neardup::email
