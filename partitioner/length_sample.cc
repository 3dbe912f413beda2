#include "partitioner/length_sample.h"

#include <numeric>

namespace neardup::partitioner {

void LengthSample::Add(const PageFeatures& f) { Add(f.length_vector, f.shingle_vector); }

void LengthSample::Add(std::span<const uint32_t> word_lengths, std::span<const uint32_t> shingle_counts) {
  words_.insert(words_.end(), word_lengths.begin(), word_lengths.end());
  shingles_.insert(shingles_.end(), shingle_counts.begin(), shingle_counts.end());
  word_count_.push_back(std::accumulate(word_lengths.begin(), word_lengths.end(), 0u));
  shingle_count_.push_back(std::accumulate(shingle_counts.begin(), shingle_counts.end(), 0u));
}

}  // namespace neardup::partitioner
