// The shard's in-memory index: the prefix index, the page tables (sizes, length vectors, prefix
// cuts, parity bitmaps) and the token order; rebuilding them from the log.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/mapped_array.h"
#include "tier2/shard_impl.h"

namespace neardup::tier2 {

void Shard::Impl::SetPageTable(uint32_t slot, const pb::ShardIndexEntry& e) {
  const size_t d = options_.dims;
  if (slot >= size_.size()) {
    const size_t n = GrownSize(size_.size(), size_t{slot} + 1);
    GrowTo<uint32_t>(&size_, n, 0);
    GrowTo<uint16_t>(&vec_, n * d, 0);
    GrowTo<uint32_t>(&cut_, n, 0);
    GrowTo<uint64_t>(&bits_, n * kBitmapWords, 0);
  }
  size_[slot] = e.size();
  cut_[slot] = static_cast<uint32_t>((e.prefix_size() == 0 ? 0 : order_.Key(e.prefix(e.prefix_size() - 1))) >> 32);
  for (size_t i = 0; i < d; ++i) {
    vec_[slot * d + i] = static_cast<uint16_t>(std::min<uint32_t>(e.shingle_vector(static_cast<int>(i)), kWide));
  }
  std::copy(e.bitmap().begin(), e.bitmap().end(), bits_.begin() + static_cast<ptrdiff_t>(slot * kBitmapWords));
}

void Shard::Impl::MakeIndexEntry(const pb::PageSignature& sig, std::vector<uint64_t>* prefix,
                                 pb::ShardIndexEntry* e) const {
  e->Clear();
  e->set_size(static_cast<uint32_t>(sig.shingles_size()));
  *e->mutable_shingle_vector() = sig.shingle_vector();
  const ParityBitmap bitmap = MakeParityBitmap(Shingles(sig));
  e->mutable_bitmap()->Add(bitmap.begin(), bitmap.end());
  IndexPrefix(sig, prefix);
  e->mutable_prefix()->Add(prefix->begin(), prefix->end());
}

Status Shard::Impl::RebuildIndex(int bucket_bits) {
  Status error;
  std::vector<uint32_t> new_size, new_cut;
  std::vector<uint16_t> new_vec;
  std::vector<uint64_t> new_bits;
  size_.swap(new_size);
  vec_.swap(new_vec);
  cut_.swap(new_cut);
  bits_.swap(new_bits);
  bool first_pass = true;
  // Every slot with a signature is a resident page (Apply clears the locations of the pages it
  // replaces or removes before it rebuilds). Build scans twice: the first pass reads the
  // signatures, fills the page tables and keeps each page's prefix (8 bytes a posting, for the
  // rebuild only), which the second replays. Kept in their own mappings, so that the memory goes
  // back to the system when the rebuild ends, whatever the allocator does.
  MappedArray<uint32_t> kept_slots;
  MappedArray<uint64_t> kept_ends;  // kept_tokens[kept_ends[i-1], kept_ends[i]) is kept_slots[i]'s prefix
  MappedArray<uint64_t> kept_tokens;
  auto scan = [&](const PrefixIndex::BulkVisitor& visit) {
    if (!error.ok()) return;
    if (!first_pass) {
      for (size_t i = 0, begin = 0; i < kept_slots.size(); begin = kept_ends[i++]) {
        visit(kept_slots[i], std::span<const uint64_t>(kept_tokens.data() + begin, kept_ends[i] - begin));
      }
      return;
    }
    first_pass = false;
    std::string buffer;
    pb::PageSignature sig;
    pb::ShardIndexEntry e;
    std::vector<uint64_t> prefix;
    for (uint32_t slot = 0; slot < loc_.size(); ++slot) {
      if (!HasLocation(slot)) continue;
      if (Status s = ReadSignature(slot, &buffer, &sig); !s.ok()) {
        error = s;
        return;
      }
      if (static_cast<uint32_t>(sig.shingle_vector_size()) != options_.dims) {
        error = Corruption("shard: " + options_.path + ": the signature of slot " + std::to_string(slot) + " has " +
                           std::to_string(sig.shingle_vector_size()) + " length dimensions, not " +
                           std::to_string(options_.dims));
        return;
      }
      MakeIndexEntry(sig, &prefix, &e);
      SetPageTable(slot, e);
      const uint64_t end = kept_tokens.size() + prefix.size();
      kept_slots.append(&slot, 1);
      kept_tokens.append(prefix.data(), prefix.size());
      kept_ends.append(&end, 1);
      visit(slot, prefix);
    }
  };
  PrefixIndex built = PrefixIndex::Build(bucket_bits, scan);
  if (!error.ok()) {
    size_.swap(new_size);
    vec_.swap(new_vec);
    cut_.swap(new_cut);
    bits_.swap(new_bits);
    return error;
  }
  index_ = std::move(built);
  demoted_lists_.clear();  // every page indexed anew: no postings of demoted tokens left
  ++rebuilds_;
  return Status::Ok();
}

Status Shard::Impl::Reorder() {
  // Every resident page's full set (the sample is the first order_sample_pages pages).
  std::vector<std::vector<uint64_t>> sets;
  {
    std::string buffer;
    pb::PageSignature sig;
    for (uint32_t slot = 0; slot < loc_.size(); ++slot) {
      if (!HasLocation(slot)) continue;
      RETURN_IF_ERROR(ReadSignature(slot, &buffer, &sig));
      sets.emplace_back(sig.shingles().begin(), sig.shingles().end());
    }
  }
  const std::vector<uint64_t> frequent = FrequentTokens(sets, options_.frequent_min_pages);
  const TokenOrder order = TokenOrder::FromFrequent(frequent);
  // The order is stored; the index is rebuilt in it (from the signatures, on every restart too).
  if (Status s = WriteFileAtomically(env_, File(kOrderFile), order.Serialize(), options_.sync); !s.ok()) {
    return Status(s.code(), "shard: write the token order: " + s.message());
  }
  order_ = order;
  order_derived_ = true;
  frequent_tokens_ = frequent.size();
  ScheduleRefresh();
  return RebuildIndex(index_.bucket_bits());
}

Status Shard::Impl::RefreshOrder() {
  // Due again once the shard has doubled, whatever happens below.
  ScheduleRefresh();
  // The lists are counted in the main arrays: the overflow goes there first.
  if (index_.overflow_postings() > 0) {
    index_.Compact(/*purge=*/false);
    ++compactions_;
  }
  // A crowded list is usually one token in many prefixes: a site's header or footer shingle.
  // Its token is the one of the list's bucket and fingerprint that most of a sample of its pages
  // hold; with it go the tokens at least 3/4 of the sample share (the rest of the site's
  // template), which would otherwise crowd the prefixes next.
  constexpr size_t kSample = 8;
  const std::vector<PrefixIndex::Crowded> crowded = index_.FindCrowded(options_.crowded_token_pages, kSample);
  std::vector<uint64_t> marked;
  std::vector<uint64_t> lists;  // remembered in demoted_lists_ once the new order is in place
  std::string buffer;
  pb::PageSignature sig;
  std::unordered_map<uint64_t, uint32_t> in_pages;  // token -> sampled pages holding it
  for (const PrefixIndex::Crowded& c : crowded) {
    const uint64_t list = uint64_t{c.bucket} << 8 | c.fingerprint;
    if (demoted_lists_.count(list)) continue;
    in_pages.clear();
    uint32_t pages = 0;
    for (uint32_t slot : c.sample) {
      if (!HasLocation(slot)) continue;
      RETURN_IF_ERROR(ReadSignature(slot, &buffer, &sig));
      ++pages;
      for (uint64_t h : Shingles(sig)) ++in_pages[h];
    }
    uint64_t token = 0;
    uint32_t most = 0;
    for (const auto& [h, n] : in_pages) {
      if (index_.InGroup(c, h) && (n > most || (n == most && h < token))) {
        token = h;
        most = n;
      }
    }
    if (most < 2 || order_.Frequent(token)) continue;  // no one token behind the list
    lists.push_back(list);
    marked.push_back(token);
    if (pages >= 4) {
      for (const auto& [h, n] : in_pages) {
        if (4 * n >= 3 * pages && h != token && !order_.Frequent(h)) marked.push_back(h);
      }
    }
  }
  if (marked.empty()) return Status::Ok();
  std::sort(marked.begin(), marked.end());
  marked.erase(std::unique(marked.begin(), marked.end()), marked.end());
  const TokenOrder next = order_.WithFrequent(marked);

  // The pages whose prefix holds a marked token are in those tokens' lists (with a few others
  // that share a list by chance). Their new prefixes are computed before anything changes.
  std::vector<uint32_t> affected;
  for (uint64_t h : marked) index_.ForEach(h, [&](uint32_t slot) { affected.push_back(slot); });
  std::sort(affected.begin(), affected.end());
  affected.erase(std::unique(affected.begin(), affected.end()), affected.end());
  struct Moved {
    uint32_t slot;
    uint32_t cut;
    std::vector<uint64_t> added;  // tokens its new prefix holds and its old one did not
  };
  std::vector<Moved> moved;
  std::vector<uint64_t> before, after;
  for (uint32_t slot : affected) {
    if (!HasLocation(slot)) continue;
    RETURN_IF_ERROR(ReadSignature(slot, &buffer, &sig));
    const uint32_t p = IndexedPostings(slot);
    order_.Prefix(Shingles(sig), p, &before);
    next.Prefix(Shingles(sig), p, &after);
    if (before == after) continue;
    Moved m{slot, static_cast<uint32_t>(after.empty() ? 0 : next.Key(after.back()) >> 32), {}};
    std::sort(before.begin(), before.end());
    for (uint64_t h : after) {
      if (!std::binary_search(before.begin(), before.end(), h)) m.added.push_back(h);
    }
    moved.push_back(std::move(m));
  }
  // The order is stored first: a restart rebuilds the index in it.
  if (Status s = WriteFileAtomically(env_, File(kOrderFile), next.Serialize(), options_.sync); !s.ok()) {
    return Status(s.code(), "shard: write the token order: " + s.message());
  }
  for (const Moved& m : moved) {
    index_.AddPostings(m.slot, m.added);
    cut_[m.slot] = m.cut;
  }
  order_ = next;
  demoted_lists_.insert(lists.begin(), lists.end());
  frequent_tokens_ += marked.size();
  ++order_refreshes_;
  refreshed_pages_ += moved.size();
  return Status::Ok();
}

}  // namespace neardup::tier2
