// Shard::CompareBatch: the batch rules, every live page probed against the resident pages
// (candidates from the prefix index, the filters, verification by merge), and the in-batch join.
#include <algorithm>
#include <atomic>
#include <bit>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/bucket_sort.h"
#include "common/run_on_threads.h"
#include "document/shingle.h"
#include "document/signature.h"
#include "tier2/shard_impl.h"

namespace neardup::tier2 {
namespace {

template <typename F>
void ParallelFor(int threads, size_t n, F&& f) {
  if (threads <= 1 || n < 2) {
    for (size_t i = 0; i < n; ++i) f(0, i);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&](int w) {
    for (size_t i; (i = next.fetch_add(1)) < n;) f(w, i);
  };
  RunOnThreads(threads, "nd-shard-work", work);
}

}  // namespace

Status Shard::Impl::PlanBatch(std::span<const ShardPage> batch, Plan* plan) const {
  if (batch.size() > options_.max_batch_pages) {
    return InvalidArgument("batch of " + std::to_string(batch.size()) + " pages exceeds max_batch_pages " +
                           std::to_string(options_.max_batch_pages));
  }
  std::unordered_map<std::string_view, uint32_t> last;
  last.reserve(batch.size());
  for (uint32_t i = 0; i < batch.size(); ++i) {
    const pb::PageSignature* sig = batch[i].signature;
    if (sig == nullptr) return InvalidArgument("batch page " + std::to_string(i) + ": no signature");
    if (sig->url().empty()) return InvalidArgument("batch page " + std::to_string(i) + ": empty url");
    if (Status s = batch[i].validated ? Status::Ok() : ValidateSignature(*sig); !s.ok()) {
      return InvalidArgument("batch page " + std::to_string(i) + " (" + sig->url() + "): " + s.message());
    }
    if (static_cast<uint32_t>(sig->shingle_vector_size()) != options_.dims) {
      return InvalidArgument("batch page " + std::to_string(i) + " (" + sig->url() + "): " +
                             std::to_string(sig->shingle_vector_size()) + " dimensions, the shard has " +
                             std::to_string(options_.dims));
    }
    if (options_.shingle_k != 0 && sig->shingle_k() != options_.shingle_k) {
      return InvalidArgument("batch page " + std::to_string(i) + " (" + sig->url() + "): shingle k " +
                             std::to_string(sig->shingle_k()) + ", the shard has " +
                             std::to_string(options_.shingle_k));
    }
    last[sig->url()] = i;
  }
  for (uint32_t i = 0; i < batch.size(); ++i) {
    if (last[batch[i].signature->url()] != i) plan->superseded.push_back(i);
    else if (batch[i].signature->shingles_size() == 0) plan->empty.push_back(i);
    else plan->live.push_back(i);
  }
  return Status::Ok();
}

void Shard::Impl::ResidentCandidates(const pb::PageSignature& x, double t, Scratch* s,
                                     std::vector<uint32_t>* verify) const {
  const auto xs = Shingles(x);
  const uint32_t n = static_cast<uint32_t>(xs.size());
  const uint32_t c = options_.prefix_overlap;
  const uint32_t p = PrefixLength(n, t, c);
  const uint32_t need = RequiredPrefixMatches(n, t, c);
  const SizeRange sizes = PartnerSizes(n, t);
  const size_t d = options_.dims;
  order_.Prefix(xs, p, &s->prefix);
  s->bitmap = MakeParityBitmap(xs);
  s->keys.resize(s->prefix.size());
  for (size_t k = 0; k < s->prefix.size(); ++k) s->keys[k] = order_.Key(s->prefix[k]);
  // Every posting that matches a prefix token, then counted per slot by sorting: only the few
  // slots with enough matches are looked up in the page table.
  s->touched.clear();
  index_.Collect(s->prefix, &s->touched);
  s->stats.postings_scanned += s->touched.size();
  s->hits.clear();
  auto keep = [&](uint32_t slot, uint32_t matches) {
    if (matches >= need && index_.IsLive(slot) && size_[slot] >= sizes.lo && size_[slot] <= sizes.hi) {
      s->hits.emplace_back(slot, matches);
    }
  };
  const size_t bound = index_.slot_bound();
  if (bound <= options_.dense_count_slots) {
    // Counted in a per-slot array (it stays in cache at this size), a posting at a time; then the
    // hits, few, sorted by slot as the sort below leaves them.
    if (s->count.size() < bound) s->count.resize(bound, 0);
    s->distinct.clear();
    for (uint32_t slot : s->touched) {
      if (s->count[slot]++ == 0) s->distinct.push_back(slot);
    }
    for (uint32_t slot : s->distinct) {
      keep(slot, s->count[slot]);
      s->count[slot] = 0;
    }
    std::sort(s->hits.begin(), s->hits.end());
  } else {
    // Slots spread about evenly below the highest: their leading bits sort them in one pass.
    uint32_t highest = 0;
    for (uint32_t slot : s->touched) highest = std::max(highest, slot);
    SortByLeadingBits(&s->touched, std::max(1, static_cast<int>(std::bit_width(highest))), [](uint32_t slot) { return slot; },
                      &s->touched_scratch);
    for (size_t i = 0; i < s->touched.size();) {
      size_t j = i + 1;
      while (j < s->touched.size() && s->touched[j] == s->touched[i]) ++j;
      keep(s->touched[i], static_cast<uint32_t>(j - i));
      i = j;
    }
  }
  verify->clear();
  for (const auto& [slot, cnt] : s->hits) {
    ++s->stats.candidates;
    // Positional bound in key space (prefix_filter.h): the probe's prefix tokens whose key is
    // below the candidate's cut lie in both prefixes, so at most cnt of them are shared; every
    // other token of the probe may be.
    {
      const size_t below = std::lower_bound(s->keys.begin(), s->keys.end(), static_cast<uint64_t>(cut_[slot]) << 32) -
                           s->keys.begin();
      if (cnt + (n - below) < MinOverlap(n, size_[slot], t)) continue;
    }
    ++s->stats.positional_passed;
    const uint16_t* v = &vec_[slot * d];
    if (std::find(v, v + d, kWide) == v + d &&
        !LengthVectorsAllow(std::span<const uint16_t>(v, d), size_[slot],
                            std::span<const uint32_t>(x.shingle_vector().data(), d), n, t)) {
      continue;
    }
    if (!BitmapsAllow(s->bitmap.data(), n, &bits_[size_t{slot} * kBitmapWords], size_[slot], t)) continue;
    verify->push_back(slot);
  }
}

Status Shard::Impl::VerifyResident(uint32_t page, const pb::PageSignature& x, double t, std::span<const uint32_t> verify,
                                   Scratch* s, std::vector<ResidentMatch>* out) const {
  const auto xs = Shingles(x);
  const uint32_t n = static_cast<uint32_t>(xs.size());
  for (uint32_t slot : verify) {
    ++s->stats.verifications;
    RETURN_IF_ERROR(ReadSignature(slot, &s->value, &s->other));
    s->stats.fetched_bytes += s->value.size();
    if (s->other.url() == x.url()) continue;  // the previous version of this very page
    const auto ys = Shingles(s->other);
    const size_t o = OverlapIfAtLeast(xs, ys, MinOverlap(n, static_cast<uint32_t>(ys.size()), t));
    if (JaccardAtLeast(o, n, ys.size(), t)) {
      ++s->stats.resident_pairs;
      out->push_back(ResidentMatch{page, s->other.url(),
                                   static_cast<double>(o) / static_cast<double>(n + ys.size() - o)});
    }
  }
  return Status::Ok();
}

void Shard::Impl::JoinBatch(std::span<const ShardPage> batch, const std::vector<uint32_t>& live, double t,
                            CompareResult* out) const {
  // Prefix join (c = 1, the shard's token order) of the batch's own pages: every (token, page) of
  // every prefix, sorted by token; pages that share a token are candidate pairs.
  std::vector<std::pair<uint64_t, uint32_t>> entries;
  std::vector<uint64_t> prefix;
  // Each prefix's keys, ascending (Prefix gives its tokens in key order): page l's are
  // keys[key_start[l] .. key_start[l + 1]).
  std::vector<uint64_t> keys;
  std::vector<uint32_t> key_start(live.size() + 1, 0);
  for (uint32_t li = 0; li < live.size(); ++li) {
    const pb::PageSignature& x = *batch[live[li]].signature;
    order_.Prefix(Shingles(x), PrefixLength(static_cast<uint32_t>(x.shingles_size()), t, 1), &prefix);
    for (uint64_t h : prefix) {
      entries.emplace_back(h, li);
      keys.push_back(order_.Key(h));
    }
    key_start[li + 1] = static_cast<uint32_t>(keys.size());
  }
  std::vector<std::pair<uint64_t, uint32_t>> scratch;
  SortByLeadingBits(&entries, 64, [](const std::pair<uint64_t, uint32_t>& e) { return e.first; }, &scratch);
  // Runs of equal tokens are the pages sharing that token, in page order. Each page walks the
  // runs of its own tokens for the later pages in them: a pair is met once per prefix token the
  // two share.
  std::vector<uint32_t> run_start, runs_of_page_start(live.size() + 1, 0), runs_of_page(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i == 0 || entries[i].first != entries[i - 1].first) run_start.push_back(static_cast<uint32_t>(i));
    ++runs_of_page_start[entries[i].second + 1];
  }
  run_start.push_back(static_cast<uint32_t>(entries.size()));
  for (size_t p = 1; p < runs_of_page_start.size(); ++p) runs_of_page_start[p] += runs_of_page_start[p - 1];
  {
    std::vector<uint32_t> fill(runs_of_page_start.begin(), runs_of_page_start.end() - 1);
    for (uint32_t r = 0; r + 1 < run_start.size(); ++r) {
      for (uint32_t e = run_start[r]; e < run_start[r + 1]; ++e) runs_of_page[fill[entries[e].second]++] = r;
    }
  }
  // Each pair's shared prefix tokens are counted (count[] holds them for the page being walked,
  // partners[] which pages it met), and the positional bound drops it before any other filter:
  // with H the lower of the two prefixes' last keys, the shared tokens below H lie in both
  // prefixes (counted), the others among the page's tokens from H on.
  auto positional_allows = [&](uint32_t la, uint32_t lb, uint32_t shared, uint32_t na, uint32_t nb) {
    if (key_start[la] == key_start[la + 1] || key_start[lb] == key_start[lb + 1]) return true;
    const uint64_t h = std::min(keys[key_start[la + 1] - 1], keys[key_start[lb + 1] - 1]);
    const uint32_t need = MinOverlap(na, nb, t);
    for (const auto& [l, n] : {std::pair{la, na}, std::pair{lb, nb}}) {
      const auto first = keys.begin() + key_start[l], last = keys.begin() + key_start[l + 1];
      const size_t below = static_cast<size_t>(std::lower_bound(first, last, h) - first);
      if (shared + (n - below) < need) return false;
    }
    return true;
  };
  std::vector<std::pair<uint32_t, uint32_t>> cand;
  std::vector<uint32_t> count(live.size(), 0), partners;
  for (uint32_t la = 0; la < live.size(); ++la) {
    const uint32_t na = static_cast<uint32_t>(batch[live[la]].signature->shingles_size());
    const SizeRange sizes = PartnerSizes(na, t);
    partners.clear();
    for (uint32_t k = runs_of_page_start[la]; k < runs_of_page_start[la + 1]; ++k) {
      const uint32_t r = runs_of_page[k];
      for (uint32_t e = run_start[r + 1]; e-- > run_start[r];) {
        const uint32_t lb = entries[e].second;
        if (lb <= la) break;  // a run is in page order: the rest come before la
        if (count[lb]++ == 0) partners.push_back(lb);
      }
    }
    for (uint32_t lb : partners) {
      const uint32_t shared = count[lb];
      count[lb] = 0;
      if (batch[live[la]].join_only && batch[live[lb]].join_only) continue;  // nobody asked
      const uint32_t nb = static_cast<uint32_t>(batch[live[lb]].signature->shingles_size());
      if (nb < sizes.lo || nb > sizes.hi) continue;
      ++out->stats.batch_candidates;
      if (positional_allows(la, lb, shared, na, nb)) cand.emplace_back(la, lb);
    }
  }
  // The resident probe's exact filters, on each pair before its merge: length vectors, then
  // parity bitmaps (made once per page, for pages in some pair); the merge stops once the pair
  // cannot reach the overlap it needs.
  std::vector<std::optional<ParityBitmap>> bitmap(live.size());
  auto bitmap_of = [&](uint32_t l) -> const ParityBitmap& {
    if (!bitmap[l]) bitmap[l] = MakeParityBitmap(Shingles(*batch[live[l]].signature));
    return *bitmap[l];
  };
  const size_t d = options_.dims;
  for (const auto& [la, lb] : cand) {
    const pb::PageSignature& x = *batch[live[la]].signature;
    const pb::PageSignature& y = *batch[live[lb]].signature;
    const uint32_t nx = static_cast<uint32_t>(x.shingles_size()), ny = static_cast<uint32_t>(y.shingles_size());
    if (static_cast<size_t>(x.shingle_vector_size()) == d && static_cast<size_t>(y.shingle_vector_size()) == d &&
        !LengthVectorsAllow(std::span<const uint32_t>(x.shingle_vector().data(), d), nx,
                            std::span<const uint32_t>(y.shingle_vector().data(), d), ny, t)) {
      continue;
    }
    if (!BitmapsAllow(bitmap_of(la).data(), nx, bitmap_of(lb).data(), ny, t)) continue;
    ++out->stats.batch_merged;
    const size_t o = OverlapIfAtLeast(Shingles(x), Shingles(y), MinOverlap(nx, ny, t));
    if (JaccardAtLeast(o, x.shingles_size(), y.shingles_size(), t)) {
      const uint32_t a = live[la], b = live[lb];
      out->in_batch.push_back(BatchMatch{std::min(a, b), std::max(a, b),
                                         static_cast<double>(o) /
                                             static_cast<double>(x.shingles_size() + y.shingles_size() - o)});
    }
  }
  out->stats.batch_pairs = out->in_batch.size();
}

Status Shard::Impl::CompareBatch(std::span<const ShardPage> batch, double threshold, CompareResult* out) const {
  *out = CompareResult{};
  if (!(threshold >= options_.min_threshold && threshold <= 1)) {
    return InvalidArgument("threshold " + std::to_string(threshold) + " is outside [" +
                           std::to_string(options_.min_threshold) + ", 1]: the shard's index is cut for " +
                           std::to_string(options_.min_threshold));
  }
  Plan plan;
  RETURN_IF_ERROR(PlanBatch(batch, &plan));
  out->superseded = plan.superseded;
  out->empty = plan.empty;
  out->stats.pages = plan.live.size();
  std::shared_lock lock(mu_);
  std::shared_lock loc(loc_mu_);
  const int workers = static_cast<int>(std::min<size_t>(options_.threads, std::max<size_t>(plan.live.size(), 1)));
  std::vector<std::unique_ptr<Scratch>> scratch = TakeScratch(workers);
  std::vector<std::vector<ResidentMatch>> found(workers);
  std::vector<Status> errors(workers);
  std::vector<std::vector<uint32_t>> verify(plan.live.size());
  ParallelFor(workers, plan.live.size(), [&](int w, size_t i) {
    const uint32_t page = plan.live[i];
    if (batch[page].join_only) return;
    ResidentCandidates(*batch[page].signature, threshold, scratch[w].get(), &verify[i]);
  });
  if (options_.read_ahead) {
    // Past the page cache, each verification waits for its read: hinted all at once, the batch's
    // reads reach the disk together.
    std::vector<SignatureLog::Ref> refs;
    for (const auto& v : verify) {
      for (uint32_t slot : v) {
        if (HasLocation(slot)) refs.push_back(Location(slot));
      }
    }
    log_->WillNeed(refs);
  }
  ParallelFor(workers, plan.live.size(), [&](int w, size_t i) {
    if (!errors[w].ok()) return;
    const uint32_t page = plan.live[i];
    if (batch[page].join_only) return;
    errors[w] = VerifyResident(page, *batch[page].signature, threshold, verify[i], scratch[w].get(), &found[w]);
  });
  for (int w = 0; w < workers; ++w) {
    if (!errors[w].ok()) {
      ReturnScratch(std::move(scratch));
      return errors[w];
    }
    const CompareStats& s = scratch[w]->stats;
    out->stats.postings_scanned += s.postings_scanned;
    out->stats.candidates += s.candidates;
    out->stats.positional_passed += s.positional_passed;
    out->stats.verifications += s.verifications;
    out->stats.resident_pairs += s.resident_pairs;
    out->stats.fetched_bytes += s.fetched_bytes;
    out->resident.insert(out->resident.end(), std::make_move_iterator(found[w].begin()),
                         std::make_move_iterator(found[w].end()));
  }
  ReturnScratch(std::move(scratch));
  std::sort(out->resident.begin(), out->resident.end(), [](const ResidentMatch& a, const ResidentMatch& b) {
    return a.page != b.page ? a.page < b.page : a.url < b.url;
  });
  JoinBatch(batch, plan.live, threshold, out);
  std::sort(out->in_batch.begin(), out->in_batch.end(),
            [](const BatchMatch& a, const BatchMatch& b) { return a.a != b.a ? a.a < b.a : a.b < b.b; });
  return Status::Ok();
}

}  // namespace neardup::tier2
