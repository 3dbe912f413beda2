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

void TokenOrder::SetMarked(std::span<const uint64_t> tokens) {
  marked_count_ = tokens.size();
  marked_zero_ = false;
  table_.clear();
  table_shift_ = 64;
  if (tokens.empty()) return;
  const uint64_t cells = std::max<uint64_t>(std::bit_ceil(tokens.size() * 2), 16);
  table_.assign(cells, 0);
  table_shift_ = 64 - std::countr_zero(cells);
  const uint64_t mask = cells - 1;
  for (uint64_t h : tokens) {
    if (h == 0) {
      marked_zero_ = true;
      continue;
    }
    uint64_t i = (h * 0x9E3779B97F4A7C15ull) >> table_shift_;
    while (table_[i] != 0) i = (i + 1) & mask;
    table_[i] = h;
  }
}

std::vector<uint64_t> TokenOrder::MarkedSorted() const {
  std::vector<uint64_t> out;
  out.reserve(marked_count_);
  if (marked_zero_) out.push_back(0);
  for (uint64_t h : table_) {
    if (h != 0) out.push_back(h);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TokenOrder TokenOrder::WithFrequent(std::span<const uint64_t> more) const {
  // An exact set, not more bits: a bit would mark the innocent tokens that share it too, and the
  // shard re-indexes only the pages that hold a token it marked.
  std::vector<uint64_t> all = MarkedSorted();
  const size_t had = all.size();
  for (uint64_t h : more) {
    if (!Frequent(h)) all.push_back(h);
  }
  if (all.size() == had) return *this;
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  TokenOrder o;
  o.bitmap_ = bitmap_;
  o.shift_ = shift_;
  o.SetMarked(all);
  return o;
}

std::string TokenOrder::Serialize() const {
  std::string out = bitmap_;
  if (marked_count_ == 0) return out;
  auto put = [&](uint64_t v) {
    char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
    out.append(b, 8);
  };
  for (uint64_t h : MarkedSorted()) put(h);
  put(marked_count_);
  put(kSetMagic);
  return out;
}

StatusOr<TokenOrder> TokenOrder::Deserialize(const std::string& bytes) {
  TokenOrder o;
  if (bytes.empty()) return o;
  auto get = [&](size_t at) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
    return v;
  };
  size_t bitmap_bytes = bytes.size();
  std::vector<uint64_t> marked;
  if (bytes.size() >= 16 && get(bytes.size() - 8) == kSetMagic) {
    const uint64_t n = get(bytes.size() - 16);
    if (n == 0 || n > (bytes.size() - 16) / 8) {
      return Corruption("token order of " + std::to_string(bytes.size()) + " bytes says it marks " +
                        std::to_string(n) + " tokens");
    }
    bitmap_bytes = bytes.size() - 16 - 8 * n;
    marked.reserve(n);
    for (uint64_t i = 0; i < n; ++i) marked.push_back(get(bitmap_bytes + 8 * i));
    if (!std::is_sorted(marked.begin(), marked.end()) ||
        std::adjacent_find(marked.begin(), marked.end()) != marked.end()) {
      return Corruption("token order's marked tokens are not ascending and unique");
    }
  }
  if (bitmap_bytes > 0) {
    if (!std::has_single_bit(bitmap_bytes) || bitmap_bytes < 2) {
      return Corruption("token order bitmap of " + std::to_string(bitmap_bytes) + " bytes is not a power of two");
    }
    o.bitmap_ = bytes.substr(0, bitmap_bytes);
    o.shift_ = 64 - std::countr_zero(static_cast<uint64_t>(bitmap_bytes) * 8);
  }
  o.SetMarked(marked);
  return o;
}

void TokenOrder::Prefix(std::span<const uint64_t> sorted, uint32_t p, std::vector<uint64_t>* out) const {
  out->clear();
  if (empty()) {
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
