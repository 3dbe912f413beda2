#include "common/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

namespace neardup {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(Config, EmptyTextMeansDefaults) {
  auto c = ParseConfig("", "empty");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->shingle().k(), 5u);
  EXPECT_EQ(c->shingle().dims(), 3u);
  EXPECT_EQ(c->reader().max_line_bytes(), 8u << 20);
  EXPECT_DOUBLE_EQ(c->baseline().threshold(), 0.9);
}

TEST(Config, ValuesAreRead) {
  auto c = ParseConfig("shingle { k: 4 dims: 2 }\nbaseline { threshold: 0.8 threads: 3 }\n", "t");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->shingle().k(), 4u);
  EXPECT_EQ(c->shingle().dims(), 2u);
  EXPECT_DOUBLE_EQ(c->baseline().threshold(), 0.8);
  EXPECT_EQ(c->baseline().threads(), 3u);
}

TEST(Config, Tier2DefaultsAndRanges) {
  auto c = ParseConfig("", "empty");
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->tier2().min_threshold(), 0.8);
  EXPECT_EQ(c->tier2().batch_pages(), 2000u);
  EXPECT_EQ(c->tier2().batch_millis(), 50u);
  EXPECT_TRUE(c->tier2().sync());
  c = ParseConfig("tier2 {\n  max_batch_pages: 500\n  batch_pages: 600\n}\n", "b.textproto");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "b.textproto:3:3: tier2.batch_pages: must be in 1..max_batch_pages (500) (got 600)");
  c = ParseConfig("tier2 { prefix_overlap: 0 }", "p");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith("p:1:9: tier2.prefix_overlap"));
  EXPECT_FALSE(ParseConfig("tier2 { min_threshold: 1.2 }", "m").ok());
  EXPECT_FALSE(ParseConfig("tier2 { batch_millis: 0 }", "m").ok());
}

TEST(Config, Tier1AndPipelineDefaults) {
  auto c = ParseConfig("", "empty");
  ASSERT_TRUE(c.ok()) << c.status().message();
  const pb::Tier1Config& t1 = c->tier1();
  ASSERT_EQ(t1.winner_rules_size(), 4);
  EXPECT_EQ(t1.winner_rules(0), pb::MARKET);
  EXPECT_EQ(t1.winner_rules(1), pb::POPULARITY);
  EXPECT_EQ(t1.winner_rules(2), pb::STATIC);
  EXPECT_EQ(t1.winner_rules(3), pb::SHORTER);
  EXPECT_DOUBLE_EQ(t1.popularity_buckets_per_doubling(), 4);
  EXPECT_EQ(t1.winner_hysteresis_buckets(), 1u);
  EXPECT_EQ(t1.market_suffix_size(), 0);
  EXPECT_DOUBLE_EQ(t1.repair_rejection_share(), 0.2);
  EXPECT_EQ(t1.repair_min_rejections(), 2u);
  EXPECT_EQ(t1.repair_max_members(), 5000u);
  EXPECT_TRUE(t1.fast_path());
  EXPECT_TRUE(t1.sync());
  EXPECT_EQ(t1.write_buffer_mib(), 0u);  // sized from the store the run expects
  EXPECT_EQ(t1.cache_mib(), 32u);
  EXPECT_FALSE(t1.compress());
  const pb::PipelineConfig& p = c->pipeline();
  EXPECT_EQ(p.shards(), 4u);
  EXPECT_EQ(p.routing(), "exact");
  EXPECT_DOUBLE_EQ(p.rho(), 1.0);
  EXPECT_DOUBLE_EQ(p.map_sample_rate(), 0.05);
  EXPECT_EQ(p.cells_per_shard(), 6u);
  EXPECT_EQ(p.background_nice(), 10u);
  EXPECT_DOUBLE_EQ(p.shard_load_base(), 800.0);
  EXPECT_EQ(DefaultConfig().SerializeAsString(), c->SerializeAsString());
}

TEST(Config, Tier1AndPipelineValuesAreKept) {
  auto c = ParseConfig(
      "tier1 {\n"
      "  winner_rules: [SHORTER, POPULARITY]\n"
      "  popularity_buckets_per_doubling: 1000\n"
      "  winner_hysteresis_buckets: 0\n"
      "  market_suffix { market: \"uk\" suffix: [\".co.uk\", \".ac.uk\"] }\n"
      "  market_suffix { market: \"gb\" suffix: \".uk\" }\n"
      "  repair_rejection_share: 1\n"
      "  repair_min_rejections: 1\n"
      "  repair_max_members: 2\n"
      "  fast_path: false\n"
      "  sync: false\n"
      "  cache_mib: 0\n"
      "  compress: true\n"
      "}\n"
      "pipeline { shards: 1024 routing: \"rho\" rho: 10 map_sample_rate: 1 cells_per_shard: 64 background_nice: 0 }\n",
      "v");
  ASSERT_TRUE(c.ok()) << c.status().message();
  const pb::Tier1Config& t1 = c->tier1();
  ASSERT_EQ(t1.winner_rules_size(), 2);  // rules left out stay out
  EXPECT_EQ(t1.winner_rules(0), pb::SHORTER);
  EXPECT_EQ(t1.winner_rules(1), pb::POPULARITY);
  EXPECT_DOUBLE_EQ(t1.popularity_buckets_per_doubling(), 1000);
  EXPECT_TRUE(t1.has_winner_hysteresis_buckets());  // 0 (no hysteresis) is kept, not defaulted
  EXPECT_EQ(t1.winner_hysteresis_buckets(), 0u);
  ASSERT_EQ(t1.market_suffix_size(), 2);
  EXPECT_EQ(t1.market_suffix(0).suffix_size(), 2);
  EXPECT_DOUBLE_EQ(t1.repair_rejection_share(), 1);
  EXPECT_EQ(t1.repair_max_members(), 2u);
  EXPECT_FALSE(t1.fast_path());
  EXPECT_FALSE(t1.sync());
  EXPECT_EQ(t1.cache_mib(), 0u);
  EXPECT_TRUE(t1.compress());
  EXPECT_EQ(c->pipeline().shards(), 1024u);
  EXPECT_EQ(c->pipeline().routing(), "rho");
  EXPECT_DOUBLE_EQ(c->pipeline().rho(), 10);
  EXPECT_EQ(c->pipeline().cells_per_shard(), 64u);
  EXPECT_EQ(c->pipeline().background_nice(), 0u);
}

TEST(Config, Tier1RangesNameTheFieldAndItsPosition) {
  auto c = ParseConfig("tier1 {\n  repair_min_rejections: 3\n  repair_rejection_share: 1.5\n}\n", "t.textproto");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(), "t.textproto:3:3: tier1.repair_rejection_share: must be in (0, 1] (got 1.500000)");
  c = ParseConfig("tier1 { repair_rejection_share: 0 }", "t");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith("t:1:9: tier1.repair_rejection_share"));
  c = ParseConfig("tier1 { popularity_buckets_per_doubling: 1001 }", "t");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith("t:1:9: tier1.popularity_buckets_per_doubling"));
  EXPECT_FALSE(ParseConfig("tier1 { popularity_buckets_per_doubling: 0 }", "t").ok());
  EXPECT_FALSE(ParseConfig("tier1 { popularity_buckets_per_doubling: -1 }", "t").ok());
  c = ParseConfig("tier1 { repair_min_rejections: 0 }", "t");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith("t:1:9: tier1.repair_min_rejections"));
  c = ParseConfig("tier1 {\n  repair_max_members: 1\n}", "t");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith("t:2:3: tier1.repair_max_members: must be at least 2"));
  c = ParseConfig("tier1 {\n  fast_path: true\n  winner_hysteresis_buckets: 1001\n}", "t");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "t:3:3: tier1.winner_hysteresis_buckets: must be in 0..1000 (got 1001)");
  c = ParseConfig("tier1 { winner_hysteresis_buckets: 1000 }", "t");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->tier1().winner_hysteresis_buckets(), 1000u);
  EXPECT_FALSE(ParseConfig("tier1 { winner_hysteresis_buckets: -1 }", "t").ok());  // not a uint32
}

TEST(Config, WinnerRulesAreCheckedElementByElement) {
  // A repeated rule is reported where it is repeated.
  auto c = ParseConfig("tier1 {\n  winner_rules: POPULARITY\n  winner_rules: STATIC\n  winner_rules: POPULARITY\n}\n", "w");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "w:4:3: tier1.winner_rules: each rule at most once (got POPULARITY again)");
  c = ParseConfig("tier1 {\n  winner_rules: SHORTER\n  winner_rules: WINNER_RULE_UNSPECIFIED\n}\n", "w");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith("w:3:3: tier1.winner_rules:"));
  EXPECT_THAT(c.status().message(), HasSubstr("WINNER_RULE_UNSPECIFIED"));
  // In list syntax the parser records one position, the field's.
  c = ParseConfig("tier1 {\n  winner_rules: [MARKET, STATIC, MARKET]\n}\n", "w");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith("w:2:3: tier1.winner_rules: each rule at most once"));
  c = ParseConfig("tier1 { winner_rules: 9 }", "w");  // proto3 enums accept unknown numbers
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith("w:1:9: tier1.winner_rules:"));
}

TEST(Config, MarketSuffixesAreChecked) {
  auto c = ParseConfig(
      "tier1 {\n"
      "  market_suffix { market: \"uk\" suffix: \".uk\" }\n"
      "  market_suffix { market: \"uk\" suffix: \".co.uk\" }\n"
      "}\n",
      "m");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "m:3:19: tier1.market_suffix.market: each market at most once (got \"uk\" again)");
  c = ParseConfig("tier1 {\n  market_suffix { market: \"uk\" suffix: \".uk\" suffix: \"co.uk\" }\n}\n", "m");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith("m:2:46: tier1.market_suffix.suffix: must start with \".\""));
  EXPECT_THAT(c.status().message(), HasSubstr("\"co.uk\""));
  c = ParseConfig("tier1 {\n  market_suffix { suffix: \".uk\" }\n}\n", "m");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith("m:2:3: tier1.market_suffix.market: must not be empty"));
  c = ParseConfig("tier1 {\n  market_suffix { market: \"de\" }\n}\n", "m");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith("m:2:3: tier1.market_suffix.suffix: at least one suffix"));
  EXPECT_FALSE(ParseConfig("tier1 { market_suffix { market: \"de\" suffix: \".\" } }", "m").ok());
}

TEST(Config, EmailSectionDefaultsAndChecks) {
  auto c = ParseConfig("", "e");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->email().mode(), "verified");
  EXPECT_EQ(c->email().k(), 10u);
  EXPECT_THAT(c->email().udcas(), ElementsAre("fixed_text", "date_format", "vertical", "field_extraction"));
  c = ParseConfig("email {\n  mode: \"exact\"\n}\n", "e.textproto");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "e.textproto:2:3: email.mode: must be \"verified\" or \"paper\" (got \"exact\")");
  c = ParseConfig("email { udcas: [\"vertical\", \"vertical\"] }", "e");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("email.udcas: each at most once (got \"vertical\" again)"));
  c = ParseConfig("email { k: 0 }", "e");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("email.k: must be in 1..1e6 (got 0)"));
  auto file = LoadConfig(std::string(NEARDUP_SOURCE_DIR) + "/configs/email.textproto");
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file->email().mode(), "verified");
}

TEST(Config, PipelineRangesNameTheFieldAndItsPosition) {
  auto c = ParseConfig("pipeline {\n  shards: 8\n  routing: \"box\"\n}\n", "p.textproto");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "p.textproto:3:3: pipeline.routing: must be \"exact\" or \"rho\" (got \"box\")");
  c = ParseConfig("pipeline { shards: 0 }", "p");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith("p:1:12: pipeline.shards: must be in 1..1024"));
  EXPECT_FALSE(ParseConfig("pipeline { shards: 1025 }", "p").ok());
  c = ParseConfig("pipeline { rho: 0.5 }", "p");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith("p:1:12: pipeline.rho"));
  EXPECT_FALSE(ParseConfig("pipeline { rho: 10.5 }", "p").ok());
  EXPECT_FALSE(ParseConfig("pipeline { map_sample_rate: 0 }", "p").ok());
  EXPECT_FALSE(ParseConfig("pipeline { map_sample_rate: 1.01 }", "p").ok());
  EXPECT_TRUE(ParseConfig("tier1 { write_buffer_mib: 0 }", "p").ok());
  EXPECT_FALSE(ParseConfig("tier1 { write_buffer_mib: 1025 }", "p").ok());
  c = ParseConfig("pipeline { cells_per_shard: 65 }", "p");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("pipeline.cells_per_shard"));
  EXPECT_FALSE(ParseConfig("pipeline { cells_per_shard: 0 }", "p").ok());
  c = ParseConfig("pipeline {\n  background_nice: 20\n}", "p");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith("p:2:3: pipeline.background_nice: must be in 0..19 (got 20)"));
  c = ParseConfig("pipeline {\n  shard_load_base: -1\n}", "p");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith("p:2:3: pipeline.shard_load_base: must be in [0, 1e9]"));
  EXPECT_FALSE(ParseConfig("pipeline { shard_load_base: inf }", "p").ok());
  EXPECT_TRUE(ParseConfig("pipeline { shard_load_base: 0 }", "p").ok());
}

TEST(Config, UnknownFieldNamesFileLineAndColumn) {
  auto c = ParseConfig("shingle {\n  k: 5\n  kk: 3\n}\n", "my.textproto");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), StartsWith("my.textproto:3:"));
  EXPECT_THAT(c.status().message(), HasSubstr("kk"));
}

TEST(Config, SyntaxAndTypeErrorsAreLocated) {
  auto c = ParseConfig("shingle { k: \"five\" }", "f");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith("f:1:"));
  c = ParseConfig("shingle { k: 5", "g");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith("g:1:"));
}

TEST(Config, OutOfRangeValuesNameTheFieldAndItsPosition) {
  auto c = ParseConfig("shingle {\n  dims: 3\n  k: 40\n}\n", "r.textproto");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "r.textproto:3:3: shingle.k: must be in 1..16 (got 40)");
  c = ParseConfig("baseline { threshold: 1.5 }", "r");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith("r:1:12: baseline.threshold"));
  c = ParseConfig("baseline { threshold: 0 }", "r");
  ASSERT_FALSE(c.ok());
  c = ParseConfig("shingle { k: 0 }", "r");
  ASSERT_FALSE(c.ok());
  c = ParseConfig("reader { max_line_bytes: 10 }", "r");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("reader.max_line_bytes"));
}

TEST(Config, ShippedConfigsAreValid) {
  auto c = LoadConfig(std::string(NEARDUP_SOURCE_DIR) + "/configs/embedded.textproto");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->shingle().k(), 5u);
  // The shipped file shows the defaults: loading it equals loading nothing.
  EXPECT_EQ(c->SerializeAsString(), DefaultConfig().SerializeAsString());
}

// The sections: NeardupConfig's fields, each a message whose fields are the settings.
std::vector<const google::protobuf::FieldDescriptor*> Sections() {
  std::vector<const google::protobuf::FieldDescriptor*> out;
  const auto* root = pb::NeardupConfig::descriptor();
  for (int i = 0; i < root->field_count(); ++i) out.push_back(root->field(i));
  return out;
}

// A field added to config.proto without a default fails here, naming it: every field of every
// section declares (default_value), and ConfigDefaults() holds it.
TEST(Config, EveryFieldOfEverySectionDeclaresItsDefault) {
  const pb::NeardupConfig& defaults = ConfigDefaults();
  const auto* reflection = defaults.GetReflection();
  for (const auto* section : Sections()) {
    ASSERT_EQ(section->type(), google::protobuf::FieldDescriptor::TYPE_MESSAGE) << section->full_name();
    ASSERT_FALSE(section->is_repeated()) << section->full_name();
    ASSERT_TRUE(reflection->HasField(defaults, section)) << section->full_name();
    const google::protobuf::Message& s = reflection->GetMessage(defaults, section);
    const auto* d = section->message_type();
    ASSERT_GT(d->field_count(), 0) << section->full_name();
    for (int i = 0; i < d->field_count(); ++i) {
      const auto* f = d->field(i);
      const std::string path = section->name() + "." + f->name();
      if (f->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE && !f->is_repeated()) {
        // A group of fields inside a section (e.g. tier2_server.tls): each of its fields declares
        // its default.
        for (int j = 0; j < f->message_type()->field_count(); ++j) {
          const auto* g = f->message_type()->field(j);
          EXPECT_TRUE(g->options().HasExtension(pb::default_value))
              << path << "." << g->name() << " declares no (default_value)";
        }
        continue;
      }
      EXPECT_TRUE(f->options().HasExtension(pb::default_value)) << path << " declares no (default_value)";
      if (f->is_repeated()) continue;
      // Presence ("optional"): a value written in a file, even 0 or false, is told from a default.
      EXPECT_TRUE(f->has_presence()) << path << " is not optional";
      EXPECT_TRUE(s.GetReflection()->HasField(s, f)) << path << " has no default in ConfigDefaults()";
    }
  }
  // What an empty file means; and the defaults written out read back the same, so each lies in
  // its declared range.
  auto empty = ParseConfig("", "empty");
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_EQ(empty->SerializeAsString(), defaults.SerializeAsString());
  auto written = ParseConfig(defaults.DebugString(), "defaults");
  ASSERT_TRUE(written.ok()) << written.status().message();
  EXPECT_EQ(written->SerializeAsString(), defaults.SerializeAsString());
}

// Every declared range is well formed, rejects values just outside it with the usual message at
// the field's position, and accepts its bounds.
TEST(Config, EveryDeclaredRangeIsChecked) {
  int ranges = 0;
  for (const auto* section : Sections()) {
    const auto* d = section->message_type();
    for (int i = 0; i < d->field_count(); ++i) {
      const auto* f = d->field(i);
      const auto& o = f->options();
      if (!o.HasExtension(pb::min) && !o.HasExtension(pb::max)) {
        EXPECT_FALSE(o.HasExtension(pb::min_exclusive) || o.HasExtension(pb::max_exclusive)) << f->full_name();
        continue;
      }
      ++ranges;
      const std::string path = section->name() + "." + f->name();
      const bool integral = f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_UINT32 ||
                            f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_UINT64;
      ASSERT_TRUE(integral || f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE) << path;
      if (integral) {
        EXPECT_FALSE(o.GetExtension(pb::min_exclusive) || o.GetExtension(pb::max_exclusive)) << path;
      }
      if (o.HasExtension(pb::min) && o.HasExtension(pb::max)) {
        EXPECT_LT(o.GetExtension(pb::min), o.GetExtension(pb::max)) << path;
      }
      const std::string range = ConfigRange(path);
      ASSERT_FALSE(range.empty()) << path;
      auto text = [&](double v) {
        return section->name() + " {\n  " + f->name() + ": " +
               (integral ? std::to_string(static_cast<uint64_t>(v)) : std::to_string(v)) + "\n}\n";
      };
      auto expect_refused = [&](double v) {
        if (integral && v < 0) return;  // not a value of the field's type
        EXPECT_FALSE(ConfigRangeError(path, v).empty()) << path << " " << v;
        auto c = ParseConfig(text(v), "t");
        ASSERT_FALSE(c.ok()) << path << " " << v;
        EXPECT_THAT(c.status().message(), StartsWith("t:2:3: " + path + ": must be " + range + " (got "));
      };
      auto expect_accepted = [&](double v) {
        EXPECT_EQ(ConfigRangeError(path, v), "") << path << " " << v;
        auto c = ParseConfig(text(v), "t");
        EXPECT_TRUE(c.ok()) << path << " " << v << ": " << c.status().message();
      };
      if (o.HasExtension(pb::min)) {
        const double min = o.GetExtension(pb::min);
        const double below = integral ? min - 1 : min - 0.5;
        expect_refused(o.GetExtension(pb::min_exclusive) ? min : below);
        if (!o.GetExtension(pb::min_exclusive)) expect_accepted(min);
      }
      if (o.HasExtension(pb::max)) {
        const double max = o.GetExtension(pb::max);
        const double above = integral ? max + 1 : max + 1 + std::abs(max) / 2;
        expect_refused(o.GetExtension(pb::max_exclusive) ? max : above);
        if (!o.GetExtension(pb::max_exclusive)) expect_accepted(max);
      }
    }
  }
  EXPECT_GE(ranges, 20);
}

TEST(Config, RangesAndDefaultsByPath) {
  EXPECT_EQ(ConfigRange("tier2.prefix_overlap"), "in 1..64");
  EXPECT_EQ(ConfigRange("tier2.min_threshold"), "in (0, 1]");
  EXPECT_EQ(ConfigRange("pipeline.rho"), "in [1, 10]");
  EXPECT_EQ(ConfigRange("pipeline.shard_load_base"), "in [0, 1e9]");
  EXPECT_EQ(ConfigRange("tier1.winner_hysteresis_buckets"), "in 0..1000");
  EXPECT_EQ(ConfigRange("reader.max_line_bytes"), "at least 1024");
  EXPECT_EQ(ConfigRange("tier2.sync"), "");
  EXPECT_EQ(ConfigRangeError("tier2.prefix_overlap", 70), "must be in 1..64");
  EXPECT_EQ(ConfigRangeError("tier2.prefix_overlap", 64), "");
  EXPECT_EQ(ConfigRangeError("tier2.min_threshold", 0), "must be in (0, 1]");
  EXPECT_EQ(ConfigRangeError("tier2.min_threshold", 1), "");
  EXPECT_EQ(ConfigRangeError("tier2.min_threshold", std::nan("")), "must be in (0, 1]");
  EXPECT_EQ(ConfigRangeError("tier1.repair_max_members", 1), "must be at least 2");
  EXPECT_EQ(ConfigRangeError("tier2.order_sample_pages", 0), "");  // no range declared
  EXPECT_EQ(ConfigDefaultText("baseline.threshold"), "0.9");
  EXPECT_EQ(ConfigDefaultText("pipeline.routing"), "exact");
  EXPECT_EQ(ConfigDefaults().tier2().prefix_overlap(), 2u);
  EXPECT_DEATH(ConfigRange("tier2.no_such_field"), "tier2.no_such_field is not a field");
  EXPECT_DEATH(ConfigRange("tier2.sync.x"), "is not a field");
}

TEST(Config, MissingFileIsAnIoError) {
  auto c = LoadConfig("/nonexistent.textproto");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace neardup
