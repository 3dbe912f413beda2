#include "tier1/packed_records.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <unordered_map>

namespace neardup::tier1 {
namespace {

std::string Bytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// Random puts (replacing some), takes and erases against a map: every record reads back as put,
// the segments of taken records are cleaned (the memory stays within a few times the live
// bytes), and once every record is gone nothing is held.
TEST(PackedRecords, AnswersAsAMapThroughPutsTakesAndCleaning) {
  std::mt19937_64 rng(11);
  PackedRecords packed;
  std::unordered_map<uint64_t, std::string> model;
  std::string out;
  size_t model_bytes = 0;
  for (int op = 0; op < 200000; ++op) {
    const uint64_t key = rng() % 20000;
    const int kind = static_cast<int>(rng() % 10);
    if (kind < 5) {
      // Mostly small records, a few longer than a segment.
      const size_t n = rng() % 1000 == 0 ? PackedRecords::kSegmentBytes + rng() % 5000 : rng() % 400;
      std::string b = Bytes(rng, n);
      packed.Put(key, b, static_cast<uint32_t>(op / 1000));
      if (auto it = model.find(key); it != model.end()) model_bytes -= it->second.size() + PackedRecords::kHeaderBytes;
      model_bytes += b.size() + PackedRecords::kHeaderBytes;
      model[key] = std::move(b);
    } else if (kind < 9) {
      const bool had = model.count(key) > 0;
      ASSERT_EQ(packed.Take(key, &out), had) << op;
      if (had) {
        ASSERT_EQ(out, model[key]) << op;
        model_bytes -= out.size() + PackedRecords::kHeaderBytes;
        model.erase(key);
      }
    } else {
      packed.Erase(key);
      if (auto it = model.find(key); it != model.end()) {
        model_bytes -= it->second.size() + PackedRecords::kHeaderBytes;
        model.erase(it);
      }
    }
    ASSERT_EQ(packed.size(), model.size());
    ASSERT_EQ(packed.live_bytes(), model_bytes);
  }
  EXPECT_LT(packed.bytes(), 4 * packed.live_bytes() + 64 * PackedRecords::kSegmentBytes);
  for (const auto& [key, b] : model) {
    EXPECT_TRUE(packed.Contains(key));
    ASSERT_TRUE(packed.Take(key, &out));
    EXPECT_EQ(out, b);
  }
  EXPECT_EQ(packed.size(), 0u);
  EXPECT_EQ(packed.bytes(), 0u);
  EXPECT_FALSE(packed.Take(1, &out));
  packed.Put(5, "", 0);  // an empty record is a record
  EXPECT_TRUE(packed.Take(5, &out));
  EXPECT_EQ(out, "");
}

// Shrink keeps the records of the newest epochs that fit in half the bound, drops the rest and
// moves what stays together; under the bound it does nothing.
TEST(PackedRecords, ShrinkDropsTheOldestEpochsFirst) {
  PackedRecords packed;
  const std::string b(984, 'x');  // 1,000 bytes with its header
  for (uint32_t epoch = 1; epoch <= 10; ++epoch) {
    for (uint64_t k = 0; k < 100; ++k) packed.Put(epoch * 1000 + k, b, epoch);
  }
  const size_t before = packed.bytes();
  packed.Shrink(before, 10);
  EXPECT_EQ(packed.size(), 1000u);
  packed.Shrink(800000, 10);  // half: 400,000 bytes, the newest epochs whole
  EXPECT_LE(packed.live_bytes(), 400000u);
  EXPECT_GE(packed.live_bytes(), 300000u);
  EXPECT_LE(packed.bytes(), packed.live_bytes() + 1024 * 16) << "no dead bytes stay, the table is sized anew";
  for (uint32_t epoch = 1; epoch <= 10; ++epoch) {
    const bool kept = packed.Contains(epoch * 1000);
    for (uint64_t k = 0; k < 100; ++k) EXPECT_EQ(packed.Contains(epoch * 1000 + k), kept) << epoch;
    if (epoch >= 8) {
      EXPECT_TRUE(kept) << epoch;
    }
    if (epoch <= 6) {
      EXPECT_FALSE(kept) << epoch;
    }
  }
  packed.Shrink(1, 10);
  EXPECT_EQ(packed.size(), 0u);
  EXPECT_EQ(packed.bytes(), 0u);
}

}  // namespace
}  // namespace neardup::tier1
