// LengthSample: the length vectors of a sample of pages, flat in memory (what maps are built,
// evaluated and rebalanced from).
//
//   LengthSample sample(3);
//   sample.Add(features);                       // from SignCrawl
//   auto v = sample.Vector(i, pb::PartitionMap::SHINGLE_COUNTS);
//
// Thread safety: not synchronised; fill from one thread, then read from any.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "document/signature.h"
#include "proto/partition.pb.h"

namespace neardup::partitioner {

class LengthSample {
 public:
  explicit LengthSample(uint32_t dims) : dims_(dims) {}

  // Appends a page; its vectors must have dims() entries (as Signer makes them).
  void Add(const PageFeatures& f);
  // Appends raw vectors (for tests and generated distributions).
  void Add(std::span<const uint32_t> word_lengths, std::span<const uint32_t> shingle_counts);

  uint32_t dims() const { return dims_; }
  size_t size() const { return word_count_.size(); }
  std::span<const uint32_t> Vector(size_t i, pb::PartitionMap::Feature feature) const {
    const auto& flat = feature == pb::PartitionMap::SHINGLE_COUNTS ? shingles_ : words_;
    return std::span<const uint32_t>(flat.data() + i * dims_, dims_);
  }
  uint32_t word_count(size_t i) const { return word_count_[i]; }
  uint32_t shingle_count(size_t i) const { return shingle_count_[i]; }

 private:
  uint32_t dims_;
  std::vector<uint32_t> words_, shingles_;
  std::vector<uint32_t> word_count_, shingle_count_;
};

}  // namespace neardup::partitioner
