#include "document/signature.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "document/shingle.h"
#include "document/tokenizer.h"

namespace neardup {

Status ValidateSignerOptions(const SignerOptions& o) {
  if (o.k < 1 || o.k > 16) return InvalidArgument("shingle k must be in 1..16, got " + std::to_string(o.k));
  if (o.dims < 1 || o.dims > 16) return InvalidArgument("dims must be in 1..16, got " + std::to_string(o.dims));
  return Status::Ok();
}

void Signer::Sign(std::string_view text, PageFeatures* out) const {
  thread_local std::vector<uint64_t> words;
  words.clear();
  HashWords(text, &words);
  out->word_count = static_cast<uint32_t>(words.size());
  out->length_vector = LengthVector(words, options_.dims);
  out->shingles = ShingleSetWithDims(words, options_.k, out->length_vector, &out->shingle_vector);
  const XXH128_hash_t d = XXH3_128bits(words.data(), words.size() * sizeof(uint64_t));
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, d);
  std::memcpy(out->digest.data(), c.digest, 16);
}

pb::PageSignature ToProto(std::string_view url, const PageFeatures& f, const SignerOptions& options) {
  pb::PageSignature s;
  s.set_url(std::string(url));
  s.mutable_shingles()->Assign(f.shingles.begin(), f.shingles.end());
  s.mutable_length_vector()->Assign(f.length_vector.begin(), f.length_vector.end());
  s.mutable_shingle_vector()->Assign(f.shingle_vector.begin(), f.shingle_vector.end());
  s.set_content_digest(reinterpret_cast<const char*>(f.digest.data()), f.digest.size());
  s.set_shingle_k(static_cast<uint32_t>(options.k));
  s.set_word_count(f.word_count);
  return s;
}

Status ValidateSignature(const pb::PageSignature& sig) {
  const auto& h = sig.shingles();
  // Every shard checks every page it is sent: the common case, a valid set, runs without a
  // branch per hash, 64 at a time; the index is looked for only when a block has a fault.
  const uint64_t* v = h.data();
  const int n = h.size();
  for (int start = 1; start < n; start += 64) {
    const int end = std::min(n, start + 64);
    bool bad = false;
    for (int i = start; i < end; ++i) bad |= v[i - 1] >= v[i];
    if (!bad) continue;
    for (int i = start; i < end; ++i) {
      if (v[i - 1] >= v[i]) {
        return InvalidArgument("signature of " + sig.url() + ": shingle hashes not sorted and unique at index " +
                               std::to_string(i));
      }
    }
  }
  if (sig.length_vector_size() != sig.shingle_vector_size()) {
    return InvalidArgument("signature of " + sig.url() + ": length_vector has " +
                           std::to_string(sig.length_vector_size()) + " dimensions, shingle_vector " +
                           std::to_string(sig.shingle_vector_size()));
  }
  const uint64_t sum = std::accumulate(sig.shingle_vector().begin(), sig.shingle_vector().end(), uint64_t{0});
  if (sig.shingle_vector_size() > 0 && sum != static_cast<uint64_t>(h.size())) {
    return InvalidArgument("signature of " + sig.url() + ": shingle_vector sums to " + std::to_string(sum) +
                           " but there are " + std::to_string(h.size()) + " shingles");
  }
  if (!sig.content_digest().empty() && sig.content_digest().size() != 16) {
    return InvalidArgument("signature of " + sig.url() + ": content_digest must be 16 bytes");
  }
  return Status::Ok();
}

}  // namespace neardup
