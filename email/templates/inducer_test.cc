#include "email/templates/inducer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <map>
#include <set>
#include <sstream>

#include "common/config.h"
#include "email/templates/annotator.h"
#include "email/templates/email_test_util.h"
#include "email/templates/evaluation.h"
#include "testing/temp_dir.h"

namespace neardup::email {
namespace {

using ::testing::HasSubstr;

class InducerTest : public ::testing::Test {
 protected:
  std::unique_ptr<Inducer> Open(const std::string& mode, int cluster_threads = 0, int formation_threads = 0,
                                std::string path = "") {
    InducerOptions o;
    o.config = ConfigDefaults().email();
    o.config.set_mode(mode);
    o.config.set_cluster_threads(cluster_threads);
    o.config.set_formation_threads(formation_threads);
    o.config.set_max_emails_per_row(s_);
    o.config.set_reinduce_age_ms(3'600'000);
    o.path = path.empty() ? dir_.File("store-" + mode + std::to_string(opened_++)) : path;
    o.clock = &clock_;
    auto in = Inducer::Open(o);
    EXPECT_TRUE(in.ok()) << in.status().message();
    return std::move(*in);
  }
  // Replays the stream on the event-time clock, then annotates every email with the final
  // templates and scores the result.
  Scores Run(Inducer* in, const std::vector<EmailRecord>& stream, bool offer = false) {
    for (const auto& r : stream) {
      clock_.Set(*r.sent_at_ms);
      if (offer) {
        EXPECT_TRUE(in->Offer(r, /*wait=*/true));
      } else {
        EXPECT_TRUE(in->Process(r).ok());
      }
    }
    EXPECT_TRUE(in->Drain().ok());
    Annotator a(in, false, 60'000);
    EXPECT_TRUE(a.Refresh().ok());
    std::vector<std::optional<uint64_t>> as;
    std::vector<std::string> labels;
    for (const auto& r : stream) {
      auto ann = a.Annotate(r);
      EXPECT_TRUE(ann.ok());
      as.push_back(ann->template_id);
      labels.push_back(r.id[0] == 'p' ? "none" : r.id.substr(0, 2));
    }
    auto s = Score(as, labels);
    EXPECT_TRUE(s.ok());
    return *s;
  }
  neardup::test::TempDir dir_;
  ManualClock clock_{0};
  uint32_t s_ = 1000;
  int opened_ = 0;
};

TEST_F(InducerTest, VerifiedModeSeparatesTemplatesOfOneLayoutPaperModeDoesNot) {
  const auto stream = test::Stream(25, 20);
  auto verified = Open("verified");
  Scores v = Run(verified.get(), stream);
  EXPECT_DOUBLE_EQ(v.purity, 1.0);
  EXPECT_DOUBLE_EQ(v.coverage, 1.0);
  EXPECT_DOUBLE_EQ(v.fragmentation, 1.0);
  EXPECT_EQ(v.personal_clustered, 0u);
  auto paper = Open("paper");
  Scores p = Run(paper.get(), stream);
  EXPECT_LT(p.purity, 0.5);  // one structure, three templates
}

TEST_F(InducerTest, NoTemplateUnderKUniqueRecipients) {
  auto in = Open("verified");
  // 30 emails of one template to 9 recipients.
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(in->Process(test::TemplateEmail(0, i, i % 9, i)).ok());
  ASSERT_TRUE(in->Drain().ok());
  Annotator a(in.get(), false, 1);
  ASSERT_TRUE(a.Refresh().ok());
  EXPECT_EQ(a.snapshot()->size(), 0u);
  EXPECT_EQ(in->stats().new_templates, 0u);
  ASSERT_TRUE(in->Process(test::TemplateEmail(0, 30, 9, 31)).ok());  // the 10th recipient
  ASSERT_TRUE(in->Drain().ok());
  ASSERT_TRUE(a.Refresh().ok());
  EXPECT_GE(a.snapshot()->size(), 1u);
  for (const auto* t : a.snapshot()->Unique()) EXPECT_GE(t->recipients(), 10u);
}

TEST_F(InducerTest, ReinductionAfterAgeAAndFullRowsGoToTheCache) {
  s_ = 20;
  auto in = Open("verified");
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(in->Process(test::TemplateEmail(0, i, i, 1000 + i)).ok());
  ASSERT_TRUE(in->Drain().ok());
  InducerStats s = in->stats();
  EXPECT_GE(s.new_templates, 1u);
  EXPECT_GT(s.row_full + s.cache_hits, 0u);
  EXPECT_GT(s.cache_hits, 0u);  // full rows with a template are skipped without a store read
  const uint64_t formations = s.formations;
  clock_.Advance(2 * 3'600'000);  // older than A (and the cache's TTL of one hour)
  ASSERT_TRUE(in->Process(test::TemplateEmail(0, 99, 99, 2000)).ok());
  ASSERT_TRUE(in->Drain().ok());
  EXPECT_GT(in->stats().formations, formations);
  EXPECT_GE(in->stats().reinductions, 1u);
}

TEST_F(InducerTest, StagePoolsGiveTheSameTemplates) {
  // Several formation threads form rows of one template at once (the receipt's item rows give it
  // several layouts, so several rows): each template must still end with one id. Rounds, because
  // the interleaving differs from run to run.
  const auto stream = test::Stream(40, 10);
  for (int round = 0; round < 4; ++round) {
    auto in = Open("verified", 4, 3);
    Scores v = Run(in.get(), stream, /*offer=*/true);
    EXPECT_DOUBLE_EQ(v.purity, 1.0) << "round " << round;
    EXPECT_EQ(v.personal_clustered, 0u) << "round " << round;
    EXPECT_GE(v.coverage, 0.95) << "round " << round;
    EXPECT_DOUBLE_EQ(v.fragmentation, 1.0) << "round " << round << ": " << v.templates << " templates";
    EXPECT_EQ(in->stats().dropped_emails, 0u);
  }
}

// The same email in a second layout of its sender (divs for the tables): other cluster rows.
EmailRecord Relayout(EmailRecord r) {
  for (auto [from, to] : {std::pair<std::string, std::string>{"table>", "div>"}, {"tr>", "section>"}, {"td>", "article>"}}) {
    for (size_t at = r.html.find(from); at != std::string::npos; at = r.html.find(from, at + to.size())) {
      r.html.replace(at, from.size(), to);
    }
  }
  r.id += "-b";
  return r;
}

TEST_F(InducerTest, OneTemplateInTwoLayoutsFormedInTwoRowsAtOnceHasOneId) {
  // Each template is sent in two layouts that share no cluster row, interleaved, so both rows
  // reach k recipients together and are formed at once on the formation threads: the id is chosen
  // among the sender's templates, not only those of rows sharing an email.
  std::vector<EmailRecord> stream;
  int64_t t = 1'717'372'800'000;
  for (int i = 0; i < 30; ++i) {
    for (int tpl = 0; tpl < 3; ++tpl) {
      stream.push_back(test::TemplateEmail(tpl, i, i, t += 60'000));
      stream.push_back(Relayout(test::TemplateEmail(tpl, i, 500 + i, t += 60'000)));
    }
  }
  for (auto threads : {std::pair{0, 0}, std::pair{4, 3}, std::pair{4, 3}, std::pair{4, 3}}) {
    auto in = Open("verified", threads.first, threads.second);
    Scores v = Run(in.get(), stream, /*offer=*/threads.first > 0);
    EXPECT_DOUBLE_EQ(v.purity, 1.0);
    EXPECT_DOUBLE_EQ(v.coverage, 1.0);
    EXPECT_DOUBLE_EQ(v.fragmentation, 1.0) << v.templates << " templates, " << threads.first << "+" << threads.second
                                           << " threads";
  }
}

TEST_F(InducerTest, AReopenedStoreKeepsItsTemplateIds) {
  // The first half forms the templates; after a restart on the same store the rows that form
  // later (new layouts of the receipt among them) take the ids already there.
  const auto stream = test::Stream(40, 10);
  const std::string path = dir_.File("reopened");
  const size_t half = stream.size() / 2;
  std::set<uint64_t> first_ids;
  {
    auto in = Open("verified", 0, 0, path);
    for (size_t i = 0; i < half; ++i) {
      clock_.Set(*stream[i].sent_at_ms);
      ASSERT_TRUE(in->Process(stream[i]).ok());
    }
    ASSERT_TRUE(in->Drain().ok());
    ASSERT_TRUE(in->store()->ScanTemplates([&](uint64_t, const pb::EmailTemplate& t) {
      first_ids.insert(t.id());
      return true;
    }).ok());
  }
  ASSERT_EQ(first_ids.size(), 3u);
  auto in = Open("verified", 0, 0, path);
  Scores v = Run(in.get(), std::vector<EmailRecord>(stream.begin() + static_cast<ptrdiff_t>(half), stream.end()));
  EXPECT_DOUBLE_EQ(v.purity, 1.0);
  EXPECT_DOUBLE_EQ(v.fragmentation, 1.0);
  EXPECT_EQ(in->stats().new_templates, 0u);
  std::set<uint64_t> ids;
  ASSERT_TRUE(in->store()->ScanTemplates([&](uint64_t, const pb::EmailTemplate& t) {
    ids.insert(t.id());
    return true;
  }).ok());
  EXPECT_EQ(ids, first_ids);
}

TEST_F(InducerTest, LogsNeverContainSubjectsBodiesOrAddresses) {
  std::ostringstream captured;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(captured);
  auto logger = std::make_shared<spdlog::logger>("capture", sink);
  logger->set_level(spdlog::level::trace);
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(logger);
  {
    const auto stream = test::Stream(20, 10);
    auto in = Open("verified", 1, 1);
    Run(in.get(), stream, true);
  }
  spdlog::set_default_logger(previous);
  const std::string log = captured.str();
  EXPECT_THAT(log, HasSubstr("formed"));  // the test sees the module's logs
  for (const char* secret : {"@mail.example", "@shop.example", "@home.example", "Reset your", "receipt #",
                             "Weekly highlights", "Quick question", "password of your", "Thanks for your purchase",
                             "Ava", "Running about"}) {
    EXPECT_EQ(log.find(secret), std::string::npos) << "the log shows " << secret;
  }
}

TEST_F(InducerTest, AnnotatorAppliesTheTemplatesAggregatorsAndForwards) {
  auto in = Open("verified");
  const auto stream = test::Stream(25, 0);
  for (const auto& r : stream) ASSERT_TRUE(in->Process(r).ok());
  ASSERT_TRUE(in->Drain().ok());
  Annotator a(in.get(), /*forward=*/true, 60'000);
  const uint64_t before = in->stats().emails;
  auto ann = a.Annotate(test::TemplateEmail(1, 500, 77, 0));
  ASSERT_TRUE(ann.ok());
  ASSERT_TRUE(ann->template_id.has_value());
  std::map<std::string, std::string> values(ann->values.begin(), ann->values.end());
  EXPECT_EQ(values["vertical"], "\"receipt\"");
  EXPECT_THAT(values["field_extraction"], HasSubstr("\"order_number\":\"Order number SO-53500\""));
  EXPECT_EQ(values["date_format"], "[\"2024-06-15\"]");  // "15/06/2024" read day first
  ASSERT_TRUE(in->Drain().ok());
  EXPECT_EQ(in->stats().emails, before + 1);  // forwarded to clustering
  const auto* t = a.snapshot()->Find(*ann->template_id);
  ASSERT_NE(t, nullptr);
  EXPECT_THAT(TemplateJson(*t, a.snapshot()->RowsOf(t->id())), HasSubstr("\"subject_pattern\":\"Your Shop receipt *\""));
}

TEST_F(InducerTest, RowsKeepTextOnlyWhenAnAggregatorReadsItAndBatchesMatchSingleEmails) {
  const auto stream = test::Stream(30, 5);
  std::map<bool, Scores> scores;
  for (bool aggregators : {true, false}) {
    InducerOptions o;
    o.config = ConfigDefaults().email();
    o.config.set_cluster_threads(0);
    o.config.set_formation_threads(0);
    if (!aggregators) o.config.clear_udcas();
    o.path = dir_.File(aggregators ? "with" : "without");
    o.clock = &clock_;
    auto in = Inducer::Open(o);
    ASSERT_TRUE(in.ok()) << in.status().message();
    auto extractor = FeatureExtractor::Create(5);
    ASSERT_TRUE(extractor.ok());
    std::vector<PreparedEmail> batch;
    uint64_t row = 0;
    for (const auto& r : stream) {
      PreparedEmail p;
      ASSERT_TRUE((*in)->Prepare(r, extractor->get(), &p).ok());
      row = p.keys.front();
      batch.push_back(std::move(p));
      if (batch.size() == 16) {
        clock_.Set(*r.sent_at_ms);
        ASSERT_TRUE((*in)->ProcessBatch(batch).ok());
        batch.clear();
      }
    }
    ASSERT_TRUE((*in)->ProcessBatch(batch).ok());
    ASSERT_TRUE((*in)->Drain().ok());
    EXPECT_EQ((*in)->stats().emails, stream.size());
    std::vector<pb::StoredEmail> cells;
    ASSERT_TRUE((*in)->store()->ReadEmails(row, &cells).ok());
    ASSERT_FALSE(cells.empty());
    for (const auto& e : cells) {
      EXPECT_EQ(e.blocks_size() > 0, aggregators);
      EXPECT_GT(e.shingles_size(), 0);
    }
    Annotator a(in->get(), false, 60'000);
    ASSERT_TRUE(a.Refresh().ok());
    std::vector<std::optional<uint64_t>> as;
    std::vector<std::string> labels;
    for (const auto& r : stream) {
      auto ann = a.Annotate(r);
      ASSERT_TRUE(ann.ok());
      as.push_back(ann->template_id);
      labels.push_back(r.id[0] == 'p' ? "none" : r.id.substr(0, 2));
    }
    auto sc = Score(as, labels);
    ASSERT_TRUE(sc.ok());
    scores[aggregators] = *sc;
  }
  // Batched, with or without the text: the templates of one email at a time.
  auto single = Open("verified");
  const Scores one = Run(single.get(), stream);
  for (const auto& [aggregators, sc] : scores) {
    EXPECT_EQ(sc.templates, one.templates) << aggregators;
    EXPECT_DOUBLE_EQ(sc.purity, 1.0) << aggregators;
    EXPECT_DOUBLE_EQ(sc.coverage, one.coverage) << aggregators;
    EXPECT_EQ(sc.personal_clustered, 0u) << aggregators;
  }
}

}  // namespace
}  // namespace neardup::email
