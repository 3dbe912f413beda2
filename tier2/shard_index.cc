// The shard's in-memory index: the prefix index, the page tables (sizes, length vectors, prefix
// cuts, parity bitmaps) and the token order; rebuilding them from the log.
#include <algorithm>
#include <mutex>
#include <shared_mutex>
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

Status Shard::Impl::CheckIndex() const {
  std::lock_guard apply(apply_mu_);  // no write under way
  std::shared_lock lock(mu_);
  std::string buffer;
  pb::PageSignature sig;
  std::vector<uint64_t> prefix;
  for (uint32_t slot = 0; slot < loc_.size(); ++slot) {
    if (!HasLocation(slot)) continue;
    RETURN_IF_ERROR(ReadSignature(slot, &buffer, &sig));
    auto broken = [&](const std::string& what) {
      return Corruption("shard: " + options_.path + ": " + sig.url() + " (slot " + std::to_string(slot) + ") " + what);
    };
    if (!index_.IsLive(slot)) return broken("is resident but not in the index");
    order_.Prefix(Shingles(sig), IndexedPostings(slot), &prefix);
    for (uint64_t h : prefix) {
      bool posted = false;
      index_.ForEach(h, [&](uint32_t s) { posted = posted || s == slot; });
      if (!posted) return broken("has no posting for prefix token " + std::to_string(h));
    }
    const uint32_t cut = static_cast<uint32_t>((prefix.empty() ? 0 : order_.Key(prefix.back())) >> 32);
    if (cut_[slot] > cut) return broken("has a prefix cut above its prefix's");
  }
  return Status::Ok();
}

Status Shard::Impl::RefreshStep() {
  if (refresh_ == nullptr) {
    if (!order_derived_ || options_.crowded_token_pages == 0 || next_refresh_ == 0 ||
        index_.live_slots() < next_refresh_) {
      return Status::Ok();
    }
    RETURN_IF_ERROR(StartRefresh());
    if (refresh_ == nullptr) return Status::Ok();  // nothing to mark
  }
  Status s = StepRefresh(std::max<size_t>(options_.refresh_pages_per_stage, 1));
  if (s.ok() && refresh_->read == refresh_->affected.size()) s = FinishRefresh();
  if (!s.ok()) refresh_.reset();  // nothing changed; due again when the shard has doubled
  return s;
}

Status Shard::Impl::StartRefresh() {
  // Due again once the shard has doubled, whatever happens below.
  ScheduleRefresh();
  // The lists are counted in the main arrays: the overflow goes there first.
  if (index_.overflow_postings() > 0) {
    std::unique_lock lock(mu_);
    index_.Compact(/*purge=*/false);
    ++compactions_;
  }
  // A crowded list is usually one token in many prefixes: a site's header or footer shingle.
  // Its token is the one of the list's bucket and fingerprint that most of a sample of its pages
  // hold; with it go the tokens at least 3/4 of the sample share (the rest of the site's
  // template), which would otherwise crowd the prefixes next.
  constexpr size_t kSample = 8;
  const std::vector<PrefixIndex::Crowded> crowded = index_.FindCrowded(options_.crowded_token_pages, kSample);
  auto r = std::make_unique<Refresh>();
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
    r->lists.push_back(list);
    r->marked.push_back(token);
    if (pages >= 4) {
      for (const auto& [h, n] : in_pages) {
        if (4 * n >= 3 * pages && h != token && !order_.Frequent(h)) r->marked.push_back(h);
      }
    }
  }
  if (r->marked.empty()) return Status::Ok();
  std::sort(r->marked.begin(), r->marked.end());
  r->marked.erase(std::unique(r->marked.begin(), r->marked.end()), r->marked.end());
  r->next = order_.WithFrequent(r->marked);
  // The pages whose prefix holds a marked token are in those tokens' lists (with a few others
  // that share a list by chance).
  for (uint64_t h : r->marked) index_.ForEach(h, [&](uint32_t slot) { r->affected.push_back(slot); });
  std::sort(r->affected.begin(), r->affected.end());
  r->affected.erase(std::unique(r->affected.begin(), r->affected.end()), r->affected.end());
  refresh_ = std::move(r);
  return Status::Ok();
}

void Shard::Impl::NoteGain(uint32_t slot, std::span<const uint64_t> shingles, std::span<const uint64_t> prefix) {
  Refresh& r = *refresh_;
  std::vector<uint64_t>& after = r.after;
  r.next.Prefix(shingles, static_cast<uint32_t>(prefix.size()), &after);
  if (std::equal(after.begin(), after.end(), prefix.begin(), prefix.end())) {
    r.gains.erase(slot);  // (a note for an earlier page of the slot is stale)
    return;
  }
  // The prefix moved: new tokens, or the same ones with a marked one last (a short page's).
  std::vector<uint64_t>& before = r.before;
  before.assign(prefix.begin(), prefix.end());
  std::sort(before.begin(), before.end());
  Refresh::Gain g;
  g.cut = static_cast<uint32_t>(after.empty() ? 0 : r.next.Key(after.back()) >> 32);
  for (uint64_t h : after) {
    if (!std::binary_search(before.begin(), before.end(), h)) g.added.push_back(h);
  }
  r.gains[slot] = std::move(g);
}

Status Shard::Impl::StepRefresh(size_t pages) {
  Refresh& r = *refresh_;
  std::string buffer;
  pb::PageSignature sig;
  std::vector<uint64_t> prefix;
  for (const size_t end = std::min(r.affected.size(), r.read + pages); r.read < end; ++r.read) {
    const uint32_t slot = r.affected[r.read];
    if (!HasLocation(slot)) continue;  // freed since: its page is gone, or staged anew (noted then)
    RETURN_IF_ERROR(ReadSignature(slot, &buffer, &sig));
    order_.Prefix(Shingles(sig), IndexedPostings(slot), &prefix);
    NoteGain(slot, Shingles(sig), prefix);
  }
  return Status::Ok();
}

Status Shard::Impl::FinishRefresh() {
  Refresh& r = *refresh_;
  // The order is stored first: a restart rebuilds the index in it.
  if (Status s = WriteFileAtomically(env_, File(kOrderFile), r.next.Serialize(), options_.sync); !s.ok()) {
    return Status(s.code(), "shard: write the token order: " + s.message());
  }
  {
    std::unique_lock lock(mu_);
    for (const auto& [slot, g] : r.gains) {
      // A live slot's note is its page's (Publish drops the note of a slot it frees): a note for
      // a slot that is not live is a staged page's that was dropped.
      if (!index_.AddPostings(slot, g.added)) continue;
      cut_[slot] = g.cut;
      ++refreshed_pages_;
    }
    order_ = std::move(r.next);
    frequent_tokens_ += r.marked.size();
    ++order_refreshes_;
  }
  demoted_lists_.insert(r.lists.begin(), r.lists.end());
  refresh_.reset();
  return Status::Ok();
}

}  // namespace neardup::tier2
