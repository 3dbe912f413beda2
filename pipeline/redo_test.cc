// A restart (pipeline/redo.h): the redone batch's classifications, and where a run starts in its
// input against the store's progress.
#include "pipeline/redo.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "testing/temp_dir.h"

namespace neardup::pipeline::internal {
namespace {

using tier1::Classification;

CrawlRecord Record(const std::string& url) {
  CrawlRecord r;
  r.url = url;
  return r;
}

pb::PageSignature Signed(int shingles) {
  pb::PageSignature s;
  for (int i = 0; i < shingles; ++i) s.add_shingles(static_cast<uint64_t>(i + 1));
  return s;
}

TEST(RedoClassesTest, TheCommittedClassificationsWhenRecorded) {
  const std::vector<CrawlRecord> records = {Record("a"), Record("b"), Record("c")};
  const std::vector<pb::PageSignature> sigs = {Signed(3), Signed(3), Signed(3)};
  std::string stored;
  for (Classification c : {Classification::kUnchanged, Classification::kFastPath, Classification::kGone}) {
    stored += static_cast<char>(c);
  }
  EXPECT_EQ(RedoClasses(records, sigs, stored),
            (std::vector<Classification>{Classification::kUnchanged, Classification::kFastPath, Classification::kGone}));
}

TEST(RedoClassesTest, WorkedOutFromTheRecordsWithout) {
  std::vector<CrawlRecord> records = {Record("a"), Record("b"), Record("c"), Record("d"), Record("a")};
  records[1].gone = true;
  records[2].redirect_to = "x";
  const std::vector<pb::PageSignature> sigs = {Signed(3), {}, {}, Signed(0), Signed(2)};
  // A record of another batch's length is not this batch's: worked out again.
  EXPECT_EQ(RedoClasses(records, sigs, std::string(2, '\0')),
            (std::vector<Classification>{Classification::kSuperseded, Classification::kGone,
                                         Classification::kRedirect, Classification::kEmpty, Classification::kTier2}));
}

class InputStartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    input_ = dir_.File("crawl.jsonl");
    std::ofstream(input_) << std::string(1000, 'x');
  }
  InputStartOptions Options() const {
    InputStartOptions o;
    o.input = input_;
    o.input_name = "/abs/crawl.jsonl";
    o.input_size = 1000;
    o.store = dir_.File("store");
    return o;
  }
  // The identity of the input's first `bytes`.
  pb::InputIdentity Identity(uint64_t bytes) const {
    auto d = PrefixDigest::Open(input_);
    EXPECT_TRUE(d.ok());
    EXPECT_TRUE((*d)->Advance(bytes).ok());
    pb::InputIdentity id;
    id.set_name("earlier-name");
    id.set_bytes(bytes);
    uint64_t lo = 0, hi = 0;
    (*d)->Get(&lo, &hi);
    id.set_digest_lo(lo);
    id.set_digest_hi(hi);
    return id;
  }
  test::TempDir dir_;
  std::string input_;
};

TEST_F(InputStartTest, ANewStoreTakesTheInputAsItsFirstCrawl) {
  pb::Tier1Progress progress;
  auto start = FindInputStart(&progress, Options());
  ASSERT_TRUE(start.ok()) << start.status().ToString();
  EXPECT_FALSE(start->resuming);
  EXPECT_EQ(start->skip, 0u);
  EXPECT_TRUE(start->already_consumed.empty());
  EXPECT_EQ(start->digest->position(), 0u);
  EXPECT_EQ(progress.current().name(), "/abs/crawl.jsonl");
}

TEST_F(InputStartTest, TheInterruptedInputResumesAfterItsCommittedRecords) {
  pb::Tier1Progress progress;
  *progress.mutable_current() = Identity(400);
  progress.set_records_committed(40);
  progress.set_last_batch_first_record(30);
  progress.set_batches_committed(4);
  auto start = FindInputStart(&progress, Options());
  ASSERT_TRUE(start.ok()) << start.status().ToString();
  EXPECT_TRUE(start->resuming);
  EXPECT_EQ(start->skip, 40u);
  EXPECT_EQ(start->redo_from, 30u);
  EXPECT_EQ(start->digest->position(), 400u);  // hashed up to where the run reads on
  EXPECT_EQ(progress.current().name(), "earlier-name");
}

TEST_F(InputStartTest, AnotherInputWhileOneIsUnfinished) {
  pb::Tier1Progress progress;
  *progress.mutable_current() = Identity(400);
  progress.mutable_current()->set_digest_lo(progress.current().digest_lo() + 1);  // another file's
  progress.set_records_committed(40);
  InputStartOptions o = Options();
  o.lagging = true;
  EXPECT_EQ(FindInputStart(&progress, o).status().code(), StatusCode::kFailedPrecondition);
  o.lagging = false;
  o.abandon_interrupted = true;
  o.lagging = true;  // a shard missing its last batch is refused even when abandoned
  EXPECT_EQ(FindInputStart(&progress, o).status().code(), StatusCode::kFailedPrecondition);
  o.lagging = false;
  o.abandon_interrupted = false;
  EXPECT_EQ(FindInputStart(&progress, o).status().code(), StatusCode::kFailedPrecondition);
  o.abandon_interrupted = true;
  auto start = FindInputStart(&progress, o);
  ASSERT_TRUE(start.ok()) << start.status().ToString();
  EXPECT_FALSE(start->resuming);
  EXPECT_EQ(start->digest->position(), 0u);
  EXPECT_EQ(progress.current().name(), "/abs/crawl.jsonl");
  EXPECT_EQ(progress.records_committed(), 0u);
}

TEST_F(InputStartTest, AnInputConsumedWholeIsReported) {
  pb::Tier1Progress progress;
  *progress.add_consumed() = Identity(1000);
  auto start = FindInputStart(&progress, Options());
  ASSERT_TRUE(start.ok()) << start.status().ToString();
  EXPECT_EQ(start->already_consumed, "earlier-name");
  EXPECT_FALSE(progress.has_current());
  InputStartOptions o = Options();
  o.followed = true;  // a growing input must never have been consumed whole
  EXPECT_EQ(FindInputStart(&progress, o).status().code(), StatusCode::kFailedPrecondition);
  // The same size with other bytes is another input.
  pb::Tier1Progress other;
  *other.add_consumed() = Identity(1000);
  other.mutable_consumed(0)->set_digest_hi(other.consumed(0).digest_hi() ^ 1);
  start = FindInputStart(&other, Options());
  ASSERT_TRUE(start.ok()) << start.status().ToString();
  EXPECT_TRUE(start->already_consumed.empty());
  EXPECT_EQ(start->digest->position(), 0u);
}

TEST_F(InputStartTest, AnUnreadableInput) {
  pb::Tier1Progress progress;
  InputStartOptions o = Options();
  o.input = dir_.File("missing.jsonl");
  EXPECT_EQ(FindInputStart(&progress, o).status().code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace neardup::pipeline::internal
