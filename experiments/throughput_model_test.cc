// Fig. 6's cost model (throughput_model.cc): the fit recovers known coefficients, the prediction
// follows the model's formula, and bad input is refused with where it is.
#include "experiments/throughput_model.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace neardup::experiments {
namespace {

// Parts as a cluster would measure them: 1, 2 and 4 shards, a growing collection.
std::vector<MeasuredPart> SyntheticParts(const CostModel& truth, double noise, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> jitter(1 - noise, 1 + noise);
  std::vector<MeasuredPart> parts;
  for (uint32_t shards : {1u, 2u, 4u}) {
    for (int k = 1; k <= 4; ++k) {
      MeasuredPart p;
      p.shards = shards;
      p.batches = 50;
      p.pages = 50000;
      p.sends = static_cast<uint64_t>(50000 * (shards == 1 ? 1.0 : 1.3 + 0.1 * shards));
      p.resident = 50000.0 * k - 25000;
      p.imbalance = shards == 1 ? 1.0 : 1.0 + 0.02 * shards;
      p.seconds = 1;  // replaced below
      p.seconds = PredictPartSeconds(truth, p) * jitter(rng);
      parts.push_back(p);
    }
  }
  return parts;
}

TEST(ThroughputModelTest, FitRecoversKnownCoefficients) {
  CostModel truth;
  truth.c0 = 0.004;  // seconds per batch
  truth.c1 = 2e-5;   // per page compared
  truth.c2 = 3e-10;  // per page and resident page
  CostModel fit;
  ASSERT_TRUE(FitCostModel(SyntheticParts(truth, 0, 1), &fit).ok());
  EXPECT_NEAR(fit.c0, truth.c0, truth.c0 * 1e-6);
  EXPECT_NEAR(fit.c1, truth.c1, truth.c1 * 1e-6);
  EXPECT_NEAR(fit.c2, truth.c2, truth.c2 * 1e-6);
  EXPECT_LT(fit.max_relative_error, 1e-9);
}

TEST(ThroughputModelTest, FitWithNoiseStaysClose) {
  CostModel truth;
  truth.c0 = 0.004;
  truth.c1 = 2e-5;
  truth.c2 = 3e-10;
  CostModel fit;
  ASSERT_TRUE(FitCostModel(SyntheticParts(truth, 0.02, 7), &fit).ok());
  // +-2% noise on every part: the per-page terms, which dominate, stay within a few percent.
  EXPECT_NEAR(fit.c1, truth.c1, truth.c1 * 0.15);
  EXPECT_NEAR(fit.c2, truth.c2, truth.c2 * 0.15);
  EXPECT_GT(fit.rms_relative_error, 0.001);
  EXPECT_LT(fit.max_relative_error, 0.04);
}

TEST(ThroughputModelTest, PredictionWaitsForTheMostLoadedShard) {
  CostModel m;
  m.c0 = 0.01;
  m.c1 = 1e-4;
  m.c2 = 1e-9;
  MapShape s;
  s.shards = 8;
  s.imbalance = 2;
  s.sends_per_page = 3;
  // 1000 pages per batch: the heaviest shard compares 1000·3·2/8 = 750 pages against 1e6·2/8.
  const double seconds = 0.01 + 1e-4 * 750 + 1e-9 * 750 * 250000;
  EXPECT_DOUBLE_EQ(PredictThroughput(m, s, 1000, 1e6), 1000 / seconds);
  MapShape balanced = s;
  balanced.imbalance = 1;
  EXPECT_GT(PredictThroughput(m, balanced, 1000, 1e6), PredictThroughput(m, s, 1000, 1e6));
}

TEST(ThroughputModelTest, RefusesUndeterminedFits) {
  CostModel truth;
  truth.c0 = 0.004;
  truth.c1 = 2e-5;
  truth.c2 = 3e-10;
  std::vector<MeasuredPart> parts = SyntheticParts(truth, 0, 1);
  CostModel fit;
  parts.resize(2);
  EXPECT_EQ(FitCostModel(parts, &fit).code(), StatusCode::kInvalidArgument);
  // One shard count and one collection size: every row is the same up to scale.
  std::vector<MeasuredPart> same(4, SyntheticParts(truth, 0, 1)[0]);
  const Status s = FitCostModel(same, &fit);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("vary the shard count"), std::string::npos) << s.message();
  parts = SyntheticParts(truth, 0, 1);
  parts[3].seconds = 0;
  const Status z = FitCostModel(parts, &fit);
  EXPECT_EQ(z.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(z.message().find("measured part 3"), std::string::npos) << z.message();
}

class ThroughputModelFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("throughput_model_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(ThroughputModelFilesTest, BadCsvNamesFileLineAndColumn) {
  std::vector<MeasuredPart> parts;
  const std::string bad = Write("m.csv", "shards,batches,pages,sends,resident,imbalance,seconds\n1,10,1000,1000,500,1,2.5\n"
                                         "2,10,1000,x,500,1,2.5\n");
  Status s = ReadMeasuredParts(bad, &parts);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("m.csv:3: 'sends' is 'x'"), std::string::npos) << s.message();
  std::vector<MapShape> shapes;
  s = ReadMapShapes(Write("maps.csv", "dims,shards,imbalance\n3,4,1.1\n"), &shapes);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("maps.csv:1: no column 'sends_per_page'"), std::string::npos) << s.message();
  s = ReadMapShapes(Write("maps2.csv", "dims,shards,imbalance,sends_per_page\n3,4,1.1,5\n"), &shapes);
  EXPECT_NE(s.message().find("maps2.csv:2: sends_per_page 5 not in [1, shards = 4]"), std::string::npos) << s.message();
  EXPECT_EQ(ReadMapShapes((dir_ / "missing.csv").string(), &shapes).code(), StatusCode::kIoError);
}

TEST_F(ThroughputModelFilesTest, Fig6WritesMeasuredAndSimulatedRows) {
  CostModel truth;
  truth.c0 = 0.004;
  truth.c1 = 2e-5;
  truth.c2 = 3e-10;
  std::string measured = "shards,batches,pages,sends,resident,imbalance,seconds\n";
  for (const MeasuredPart& p : SyntheticParts(truth, 0, 1)) {
    measured += std::to_string(p.shards) + "," + std::to_string(p.batches) + "," + std::to_string(p.pages) + "," +
                std::to_string(p.sends) + "," + std::to_string(p.resident) + "," + std::to_string(p.imbalance) + "," +
                std::to_string(p.seconds) + "\n";
  }
  Fig6ModelOptions o;
  o.measured = Write("measured.csv", measured);
  o.maps = Write("maps.csv", "dims,shards,imbalance,sends_per_page\n1,16,1.8,2\n3,16,1.05,2.5\n");
  o.csv = (dir_ / "fig6.csv").string();
  ASSERT_TRUE(RunFig6Model(o).ok());
  std::ifstream in(o.csv);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 1u + 3u + 2u);  // header, 3 measured shard counts, 2 shapes
  EXPECT_EQ(lines[0], "dims,shards,kind,pages_per_second,speedup,imbalance,sends_per_page");
  EXPECT_EQ(lines[1].rfind("3,1,measured,", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find(",1.0000,"), std::string::npos) << lines[1];  // the reference's speed-up
  EXPECT_EQ(lines[4].rfind("1,16,simulated,", 0), 0u) << lines[4];
  EXPECT_EQ(lines[5].rfind("3,16,simulated,", 0), 0u) << lines[5];
  // The better balanced 3D map is faster at the same shard count, despite more sends.
  const double one_d = std::stod(lines[4].substr(lines[4].find("simulated,") + 10));
  const double three_d = std::stod(lines[5].substr(lines[5].find("simulated,") + 10));
  EXPECT_GT(three_d, one_d);
}

}  // namespace
}  // namespace neardup::experiments
