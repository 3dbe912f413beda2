#include "partitioner/partition_map.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>

#include "document/shingle.h"
#include "document/signature.h"
#include "partitioner/map_builder.h"

namespace neardup::partitioner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The paper's Fig. 2: two dimensions cut at 300, one shard per cell. As a tree: the root cuts
// dimension 0 at 300; each of its two children cuts dimension 1 at 300. Cell (i, j) = 2i + j.
pb::PartitionMap PaperFigure2(pb::PartitionMap::Routing routing) {
  pb::PartitionMap p;
  p.set_format_version(kPartitionMapFormat);
  p.set_generation(1);
  p.set_feature(FeatureFor(routing));
  p.set_routing(routing);
  p.set_rho(1.0);
  p.set_threshold(0.9);
  p.set_shingle_k(5);
  p.set_dims(2);
  p.set_shards(4);
  auto* root = p.add_slice();
  root->add_bounds(300);
  root->set_first_child(1);
  for (uint32_t child = 0; child < 2; ++child) {
    auto* s = p.add_slice();
    s->add_bounds(300);
    s->set_first_child(2 * child);
  }
  for (uint32_t c = 0; c < 4; ++c) p.add_cell_shard(c);
  return p;
}

TEST(PartitionMap, PaperFigure2Routing) {
  auto map = PartitionMap::FromProto(PaperFigure2(pb::PartitionMap::RHO_BOX));
  ASSERT_TRUE(map.ok()) << map.status().message();
  std::vector<uint32_t> cells;
  const uint32_t a[] = {100, 500};
  map->RouteCells(a, &cells);
  // Only ([0,300), [300,inf)) = cell 1.
  EXPECT_THAT(cells, ElementsAre(1u));
  EXPECT_EQ(map->Home(a), 1u);
  const uint32_t b[] = {280, 500};
  map->RouteCells(b, &cells);
  EXPECT_THAT(cells, ElementsAre(1u, 3u));
  const uint32_t zero[] = {0, 0};
  map->RouteCells(zero, &cells);
  EXPECT_TRUE(cells.empty());
}

TEST(PartitionMap, ExactRoutingUsesL1Distance) {
  auto map = PartitionMap::FromProto(PaperFigure2(pb::PartitionMap::EXACT_L1));
  ASSERT_TRUE(map.ok());
  std::vector<uint32_t> cells;
  // |A| = 540, radius floor(0.1111 * 540) = 60: (250, 290) is 10 from dim-1's cut and 50 from dim-0's.
  const uint32_t a[] = {250, 290};
  map->RouteCells(a, &cells);
  EXPECT_THAT(cells, ElementsAre(0u, 1u, 2u, 3u));  // 50 + 10 = 60 <= 60 reaches the far corner
  const uint32_t b[] = {240, 290};                   // |A| = 530, radius 58: corner at 60 + 10
  map->RouteCells(b, &cells);
  EXPECT_THAT(cells, ElementsAre(0u, 1u));
}

TEST(PartitionMap, RefusesBadMaps) {
  auto bad = PaperFigure2(pb::PartitionMap::RHO_BOX);
  bad.set_format_version(7);
  auto m = PartitionMap::FromProto(bad);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("format_version 7"));

  bad = PaperFigure2(pb::PartitionMap::RHO_BOX);
  bad.set_dims(3);  // the tree has depth 2
  EXPECT_THAT(PartitionMap::FromProto(bad).status().message(), HasSubstr("points past the slices"));

  bad = PaperFigure2(pb::PartitionMap::RHO_BOX);
  bad.mutable_slice(1)->add_bounds(100);
  EXPECT_THAT(PartitionMap::FromProto(bad).status().message(), HasSubstr("strictly increasing"));

  bad = PaperFigure2(pb::PartitionMap::RHO_BOX);
  bad.add_cell_shard(0);
  EXPECT_THAT(PartitionMap::FromProto(bad).status().message(), HasSubstr("covering all 5 cells"));

  bad = PaperFigure2(pb::PartitionMap::RHO_BOX);
  bad.mutable_slice(2)->set_first_child(0);  // both children claim cells 0 and 1
  EXPECT_THAT(PartitionMap::FromProto(bad).status().message(), HasSubstr("reached twice"));

  bad = PaperFigure2(pb::PartitionMap::RHO_BOX);
  bad.set_cell_shard(2, 9);
  EXPECT_THAT(PartitionMap::FromProto(bad).status().message(), HasSubstr("shard 9 of 4"));

  bad = PaperFigure2(pb::PartitionMap::RHO_BOX);
  bad.set_rho(0.5);
  EXPECT_FALSE(PartitionMap::FromProto(bad).ok());
}

TEST(PartitionMap, SaveLoadAndCorruptFiles) {
  auto map = PartitionMap::FromProto(PaperFigure2(pb::PartitionMap::RHO_BOX));
  ASSERT_TRUE(map.ok());
  const std::string path = ::testing::TempDir() + "/map_test.pb";
  ASSERT_TRUE(map->Save(path).ok());
  auto back = PartitionMap::Load(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->proto().SerializeAsString(), map->proto().SerializeAsString());

  std::ofstream(path, std::ios::binary | std::ios::trunc) << "\xff\xff\xff garbage";
  auto corrupt = PartitionMap::Load(path);
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(corrupt.status().code(), StatusCode::kCorruption);
  EXPECT_THAT(corrupt.status().message(), HasSubstr(path));

  auto missing = PartitionMap::Load(path + ".missing");
  EXPECT_EQ(missing.status().code(), StatusCode::kIoError);
  std::remove(path.c_str());
}

// The exact mode's promise, checked on real shingle sets: for every pair with Jaccard >= t,
// (1) sum_i | |A_i| - |B_i| | <= (1-t)/t |A|, and (2) B's home is among A's routed cells.
TEST(PartitionMap, ExactModeNeverLosesASimilarPair) {
  std::mt19937_64 rng(23);
  Signer signer({.k = 5, .dims = 3});
  std::vector<PageFeatures> pages;
  for (int family = 0; family < 150; ++family) {
    std::vector<std::string> words(20 + rng() % 400);
    for (auto& w : words) w = std::string("w").append(std::to_string(rng() % 3000));
    for (int member = 0; member < 4; ++member) {
      auto copy = words;
      const size_t edits = rng() % (1 + copy.size() / 25);
      for (size_t e = 0; e < edits; ++e) copy[rng() % copy.size()] = std::string("x").append(std::to_string(rng() % 3000));
      if (rng() % 3 == 0) copy.resize(copy.size() - copy.size() / 20);
      std::string text;
      for (const auto& w : copy) text.append(w).append(" ");
      PageFeatures f;
      signer.Sign(text, &f);
      pages.push_back(std::move(f));
    }
  }
  LengthSample sample(3);
  for (const auto& f : pages) sample.Add(f);
  for (double t : {0.5, 0.7, 0.8, 0.9, 0.95}) {
    for (uint32_t shards : {4u, 16u, 64u}) {
      auto map = BuildPartitionMap(sample, {.dims = 3, .shards = shards, .threshold = t,
                                            .routing = pb::PartitionMap::EXACT_L1, .cells_per_shard = 8});
      ASSERT_TRUE(map.ok()) << map.status().message();
      std::vector<uint32_t> cells;
      uint64_t similar = 0;
      for (size_t a = 0; a < pages.size(); ++a) {
        map->RouteCells(map->VectorOf(pages[a]), &cells);
        for (size_t b = 0; b < pages.size(); ++b) {
          if (a == b) continue;
          const size_t o = Overlap(pages[a].shingles, pages[b].shingles);
          if (!JaccardAtLeast(o, pages[a].shingles.size(), pages[b].shingles.size(), t)) continue;
          ++similar;
          uint64_t l1 = 0;
          for (int d = 0; d < 3; ++d) {
            l1 += static_cast<uint64_t>(std::abs(static_cast<int64_t>(pages[a].shingle_vector[d]) - pages[b].shingle_vector[d]));
          }
          ASSERT_LE(static_cast<double>(l1), (1 - t) / t * pages[a].shingles.size() + 1e-9);
          // The tighter bound routing also applies: L1 <= (1-t)/(1+t) (|A| + |B|).
          ASSERT_LE((1 + t) * static_cast<double>(l1),
                    (1 - t) * static_cast<double>(pages[a].shingles.size() + pages[b].shingles.size()) + 1e-9);
          ASSERT_TRUE(std::binary_search(cells.begin(), cells.end(), map->Home(map->VectorOf(pages[b]))))
              << "pair " << a << "," << b << " lost at t=" << t << " shards=" << shards;
        }
      }
      EXPECT_GT(similar, 50u);
    }
  }
}

}  // namespace
}  // namespace neardup::partitioner
