// Shingles, Jaccard similarity and the paper's length features.
//
// A page of n words w_1..w_n is padded with k-1 dummy words (the paper, Section 4.2), so it has
// exactly n word k-grams and even a one-word page has a shingle. A shingle's hash is XXH3-64 of
// its k word hashes. A page's shingle set is the sorted, unique array of those hashes; an empty
// page (no words) has an empty set and is never similar to anything.
//
//   std::vector<uint64_t> words;  HashWords(text, &words);
//   std::vector<uint64_t> a = ShingleSet(words, 5);
//   double j = Jaccard(a, b);
//
// Thread safety: all functions are pure and reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace neardup {

// Hash of the dummy word appended k-1 times; no real word hashes to it in practice.
inline constexpr uint64_t kDummyWordHash = 0x9E3779B97F4A7C15ull;

// Sorted unique shingle hashes of a word-hash sequence. k must be >= 1.
std::vector<uint64_t> ShingleSet(std::span<const uint64_t> word_hashes, int k);

// Like ShingleSet, and also fills per_dim[i] with the number of unique shingles whose first word
// lies in sub-dictionary i (per_dim is resized to dims). A shingle that occurs more than once,
// after first words of different sub-dictionaries, counts once, in the smallest of them.
std::vector<uint64_t> ShingleSetWithDims(std::span<const uint64_t> word_hashes, int k, int dims,
                                         std::vector<uint32_t>* per_dim);
// The same, for a caller that already has length_vector = LengthVector(word_hashes, dims) (dims
// is its size): the words are not counted again.
std::vector<uint64_t> ShingleSetWithDims(std::span<const uint64_t> word_hashes, int k,
                                         std::span<const uint32_t> length_vector, std::vector<uint32_t>* per_dim);

// The sub-dictionary (0..dims-1) a word belongs to: a stable hash of the word, independent of
// the shingle hashes.
// Multiply-shift on the high half: stable across platforms and releases.
inline uint32_t SubDictionaryMix(uint64_t word_hash) {
  return static_cast<uint32_t>((word_hash >> 32) * 0x9E3779B1ull >> 32);
}
inline uint32_t SubDictionary(uint64_t word_hash, int dims) {
  return SubDictionaryMix(word_hash) % static_cast<uint32_t>(dims);
}

// SubDictionary for one dims, without a division per word (Lemire's fastmod: exact for every
// 32-bit dividend), for the loops that place every word of a page.
class SubDictionaries {
 public:
  explicit SubDictionaries(int dims) : dims_(static_cast<uint32_t>(dims)), m_(UINT64_MAX / dims_ + 1) {}
  uint32_t operator()(uint64_t word_hash) const {
    return static_cast<uint32_t>((static_cast<unsigned __int128>(m_ * SubDictionaryMix(word_hash)) * dims_) >> 64);
  }

 private:
  uint32_t dims_;
  uint64_t m_;
};

// L(A_i): word occurrences per sub-dictionary (the paper's length vector), size dims.
std::vector<uint32_t> LengthVector(std::span<const uint64_t> word_hashes, int dims);

// |A ∩ B| of two sorted unique arrays, by merge.
size_t Overlap(std::span<const uint64_t> a, std::span<const uint64_t> b);
size_t Overlap(std::span<const uint32_t> a, std::span<const uint32_t> b);

// |A ∩ B| when it is at least `need`; otherwise some value below `need` (the merge stops as soon
// as the elements left cannot make up the difference).
size_t OverlapIfAtLeast(std::span<const uint64_t> a, std::span<const uint64_t> b, size_t need);

// |A ∩ B| / |A ∪ B|; 0 when both are empty.
double Jaccard(std::span<const uint64_t> a, std::span<const uint64_t> b);

// The one predicate every tier uses to decide "similar enough": overlap / (size_a + size_b -
// overlap) >= threshold, false for empty sets. Computed so that filters and verification agree.
inline bool JaccardAtLeast(size_t overlap, size_t size_a, size_t size_b, double threshold) {
  const size_t uni = size_a + size_b - overlap;
  if (uni == 0 || overlap == 0) return false;
  return static_cast<double>(overlap) >= threshold * static_cast<double>(uni) - 1e-9 * static_cast<double>(uni);
}

}  // namespace neardup
