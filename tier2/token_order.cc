#include "tier2/token_order.h"

#include <algorithm>
#include <bit>

#include "common/bucket_sort.h"

namespace neardup::tier2 {

TokenOrder TokenOrder::FromFrequent(std::span<const uint64_t> frequent) {
  TokenOrder o;
  if (frequent.empty()) return o;
  const uint64_t bits = std::max<uint64_t>(std::bit_ceil(frequent.size() * 64), 1 << 16);
  o.bitmap_.assign(bits / 8, '\0');
  o.shift_ = 64 - std::countr_zero(bits);
  for (uint64_t h : frequent) o.Mark(h);
  return o;
}

TokenOrder TokenOrder::WithFrequent(std::span<const uint64_t> more) const {
  if (bitmap_.empty()) return FromFrequent(more);
  if (more.empty()) return *this;
  // An innocent token is marked with the chance of a set bit. Growing keeps that chance for the
  // tokens marked already (each bit becomes a run), so the bitmap grows only as the new tokens
  // need: at least 256 bits each, which adds at most 1/256 to it.
  const uint64_t have = bitmap_.size() * 8;
  const uint64_t bits = std::max<uint64_t>(std::bit_ceil(more.size() * 256), have);
  TokenOrder o;
  if (bits == have) {
    o = *this;
  } else {
    // A token's bit in the larger bitmap is its old bit followed by the extra low bits of the
    // same product: old bit i becomes bits [i << d, (i + 1) << d).
    const int d = std::countr_zero(bits) - std::countr_zero(have);
    o.bitmap_.assign(bits / 8, '\0');
    o.shift_ = shift_ - d;
    for (uint64_t i = 0; i < have; ++i) {
      if (!((static_cast<unsigned char>(bitmap_[i >> 3]) >> (i & 7)) & 1)) continue;
      for (uint64_t b = i << d; b < (i + 1) << d; ++b) {
        o.bitmap_[b >> 3] = static_cast<char>(static_cast<unsigned char>(o.bitmap_[b >> 3]) | (1u << (b & 7)));
      }
    }
  }
  for (uint64_t h : more) o.Mark(h);
  return o;
}

StatusOr<TokenOrder> TokenOrder::Deserialize(const std::string& bytes) {
  TokenOrder o;
  if (bytes.empty()) return o;
  if (!std::has_single_bit(bytes.size()) || bytes.size() < 2) {
    return Corruption("token order bitmap of " + std::to_string(bytes.size()) + " bytes is not a power of two");
  }
  o.bitmap_ = bytes;
  o.shift_ = 64 - std::countr_zero(static_cast<uint64_t>(bytes.size()) * 8);
  return o;
}

void TokenOrder::Prefix(std::span<const uint64_t> sorted, uint32_t p, std::vector<uint64_t>* out) const {
  out->clear();
  if (bitmap_.empty()) {
    out->assign(sorted.begin(), sorted.begin() + std::min<size_t>(p, sorted.size()));
    return;
  }
  // Non-frequent tokens in hash order first; the frequent ones only if the page runs short.
  size_t frequent = 0;
  for (size_t i = 0; i < sorted.size() && out->size() < p; ++i) {
    if (!Frequent(sorted[i])) out->push_back(sorted[i]);
    else ++frequent;
  }
  if (out->size() < p && frequent > 0) {
    for (size_t i = 0; i < sorted.size() && out->size() < p; ++i) {
      if (Frequent(sorted[i])) out->push_back(sorted[i]);
    }
  }
}

std::vector<uint64_t> FrequentTokens(std::span<const std::vector<uint64_t>> sets, uint32_t min_pages) {
  size_t total = 0;
  for (const auto& s : sets) total += s.size();
  std::vector<uint64_t> all;
  all.reserve(total);
  for (const auto& s : sets) all.insert(all.end(), s.begin(), s.end());
  // Shingle hashes are uniform: sorted by their top bits first (an order sample of 20,000 pages
  // holds about ten million).
  std::vector<uint64_t> scratch;
  SortByLeadingBits(&all, 64, [](uint64_t h) { return h; }, &scratch);
  std::vector<uint64_t> out;
  for (size_t i = 0; i < all.size();) {
    size_t j = i + 1;
    while (j < all.size() && all[j] == all[i]) ++j;
    if (j - i >= std::max<uint32_t>(min_pages, 1)) out.push_back(all[i]);
    i = j;
  }
  return out;
}

}  // namespace neardup::tier2
