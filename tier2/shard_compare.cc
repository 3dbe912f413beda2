// Shard::CompareBatch: the batch rules, every live page probed against the resident pages
// (candidates from the prefix index, the filters, verification by merge), and the in-batch join;
// under max_matches_per_page, copies answered through their first page and the matches capped.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <mutex>
#include <numeric>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/bucket_sort.h"
#include "common/run_on_threads.h"
#include "common/url_hash_map.h"
#include "document/shingle.h"
#include "document/signature.h"
#include "tier2/shard_impl.h"

namespace neardup::tier2 {
namespace {

// Under a cap of K, a page's probe first reads at most kWindow * K postings of each of its prefix
// tokens, the pages indexed longest first: a crowd of thousands of copies or near-copies sharing
// the page's prefix tokens costs it that much, not the crowd (a crowd's pages share most of their
// prefix tokens, so the window's pages are counted in several and pass the count filter). Its
// first kVerifyAhead * K candidates are kept for its verification (and hinted to the log with the
// batch's). When they give fewer than K matches and a token's list or the candidates were cut,
// the page is probed again in full and the candidates not verified yet are.
constexpr uint32_t kWindow = 16;
constexpr uint32_t kVerifyAhead = 4;

// The deadline is looked at between pages, and every this many verifications or merges within one.
constexpr uint32_t kDeadlineEvery = 64;

// Hash of a shingle set's bytes (finds a batch's identical pages; equality is checked after).
uint64_t ShinglesKey(std::span<const uint64_t> shingles) {
  return UrlHash(std::string_view(reinterpret_cast<const char*>(shingles.data()), shingles.size_bytes()));
}

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

// The in-batch prefix join's index (c = 1, the shard's token order) over the pages taking part:
// every (token, page) of every prefix sorted by token, so that pages sharing a token are
// candidate pairs. Runs of equal tokens are the pages sharing that token, in page order; each
// page walks the runs of its own tokens for its partners, so a pair is met once per prefix token
// the two share.
struct JoinIndex {
  std::vector<std::pair<uint64_t, uint32_t>> entries;  // (token, page), by token
  // Each prefix's keys, ascending (Prefix gives its tokens in key order): page p's are
  // keys[key_start[p] .. key_start[p + 1]).
  std::vector<uint64_t> keys;
  std::vector<uint32_t> key_start;
  // Run r is entries[run_start[r] .. run_start[r + 1]); page p's runs are
  // runs_of_page[runs_of_page_start[p] .. runs_of_page_start[p + 1]).
  std::vector<uint32_t> run_start, runs_of_page_start, runs_of_page;

  // Builds it for `pages` pages, sig(p) giving page p's signature, at threshold t.
  template <typename Sig>
  void Build(const TokenOrder& order, uint32_t pages, double t, Sig&& sig) {
    std::vector<uint64_t> prefix;
    key_start.assign(pages + 1, 0);
    for (uint32_t p = 0; p < pages; ++p) {
      const pb::PageSignature& x = sig(p);
      order.Prefix(Shingles(x), PrefixLength(static_cast<uint32_t>(x.shingles_size()), t, 1), &prefix);
      for (uint64_t h : prefix) {
        entries.emplace_back(h, p);
        keys.push_back(order.Key(h));
      }
      key_start[p + 1] = static_cast<uint32_t>(keys.size());
    }
    std::vector<std::pair<uint64_t, uint32_t>> scratch;
    SortByLeadingBits(&entries, 64, [](const std::pair<uint64_t, uint32_t>& e) { return e.first; }, &scratch);
    runs_of_page_start.assign(pages + 1, 0);
    runs_of_page.resize(entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i == 0 || entries[i].first != entries[i - 1].first) run_start.push_back(static_cast<uint32_t>(i));
      ++runs_of_page_start[entries[i].second + 1];
    }
    run_start.push_back(static_cast<uint32_t>(entries.size()));
    for (size_t p = 1; p < runs_of_page_start.size(); ++p) runs_of_page_start[p] += runs_of_page_start[p - 1];
    std::vector<uint32_t> fill(runs_of_page_start.begin(), runs_of_page_start.end() - 1);
    for (uint32_t r = 0; r + 1 < run_start.size(); ++r) {
      for (uint32_t e = run_start[r]; e < run_start[r + 1]; ++e) runs_of_page[fill[entries[e].second]++] = r;
    }
  }

  // The positional bound of the pair (pa, pb), of sizes na and nb, sharing `shared` prefix
  // tokens: with H the lower of the two prefixes' last keys, the shared tokens below H lie in
  // both prefixes (counted), the others among each page's tokens from H on.
  bool PositionalAllows(uint32_t pa, uint32_t pb, uint32_t shared, uint32_t na, uint32_t nb, double t) const {
    if (key_start[pa] == key_start[pa + 1] || key_start[pb] == key_start[pb + 1]) return true;
    const uint64_t h = std::min(keys[key_start[pa + 1] - 1], keys[key_start[pb + 1] - 1]);
    const uint32_t need = MinOverlap(na, nb, t);
    for (const auto& [p, n] : {std::pair{pa, na}, std::pair{pb, nb}}) {
      const auto first = keys.begin() + key_start[p], last = keys.begin() + key_start[p + 1];
      const size_t below = static_cast<size_t>(std::lower_bound(first, last, h) - first);
      if (shared + (n - below) < need) return false;
    }
    return true;
  }
};

// Under a cap, a page identical to an earlier one of the batch (neither join-only) is answered
// through it: copy_of[l] is the live index of the first page with live[l]'s shingles (l itself
// when it is the first, and for every page without a cap). Counts the copies in stats->copies.
std::vector<uint32_t> BatchCopies(std::span<const ShardPage> batch, const std::vector<uint32_t>& live, uint32_t cap,
                                  CompareStats* stats) {
  std::vector<uint32_t> copy_of(live.size());
  std::iota(copy_of.begin(), copy_of.end(), 0u);
  if (cap == 0) return copy_of;
  std::unordered_map<uint64_t, uint32_t> first;
  for (uint32_t l = 0; l < live.size(); ++l) {
    if (batch[live[l]].join_only) continue;
    const auto xs = Shingles(*batch[live[l]].signature);
    const auto [it, fresh] = first.emplace(ShinglesKey(xs), l);
    if (fresh) continue;
    const auto fs = Shingles(*batch[live[it->second]].signature);
    if (std::equal(xs.begin(), xs.end(), fs.begin(), fs.end())) {
      copy_of[l] = it->second;
      ++stats->copies;
    }
  }
  return copy_of;
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
  plan->last = std::move(last);
  return Status::Ok();
}

bool Shard::Impl::CompareCall::Excluded(std::string_view url, std::string_view own) const {
  if (url == own) return true;  // the previous version of this very page
  if (cap > 0 && plan->last.count(url) > 0) return true;
  return !stale.empty() && std::binary_search(stale.begin(), stale.end(), UrlHash(url));
}

uint64_t Shard::Impl::ContentKey(uint32_t slot) const {
  const uint64_t* b = &bits_[size_t{slot} * kBitmapWords];
  uint64_t k = size_[slot] * 0x9E3779B97F4A7C15ull;
  for (size_t w = 0; w < kBitmapWords; ++w) k = std::rotl(k ^ b[w], 27) * 0xC2B2AE3D27D4EB4Full;
  return k | 1;
}

void Shard::Impl::ResidentCandidates(const pb::PageSignature& x, const CompareCall& call, Scratch* s,
                                     std::vector<uint32_t>* verify, bool* more) const {
  const double t = call.t;
  const auto xs = Shingles(x);
  const uint32_t n = static_cast<uint32_t>(xs.size());
  const uint32_t c = options_.prefix_overlap;
  const uint32_t p = PrefixLength(n, t, c);
  const uint32_t need = RequiredPrefixMatches(n, t, c);
  const size_t d = options_.dims;
  order_.Prefix(xs, p, &s->prefix);
  s->bitmap = MakeParityBitmap(xs);
  s->keys.resize(s->prefix.size());
  for (size_t k = 0; k < s->prefix.size(); ++k) s->keys[k] = order_.Key(s->prefix[k]);
  // Every posting that matches a prefix token, then counted per slot by sorting: only the few
  // slots with enough matches are looked up in the page table.
  s->touched.clear();
  const bool window = more != nullptr && call.cap > 0;
  const bool cut = index_.Collect(s->prefix, &s->touched, window ? kWindow * call.cap : 0);
  s->stats.postings_scanned += s->touched.size();
  CountHits(need, PartnerSizes(n, t), s);
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
  if (more != nullptr) *more = cut;
  if (call.cap == 0 || verify->size() <= call.cap) return;
  DistinctContentFirst(s, verify);
  if (more != nullptr && verify->size() > size_t{kVerifyAhead} * call.cap) {
    verify->resize(size_t{kVerifyAhead} * call.cap);
    *more = true;
  }
}

void Shard::Impl::CountHits(uint32_t need, SizeRange sizes, Scratch* s) const {
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
}

void Shard::Impl::DistinctContentFirst(Scratch* s, std::vector<uint32_t>* verify) const {
  // More candidates than the page may keep matches: one of each content key first (identical
  // pages share theirs, and copies of a page are in one group, so a match with a second copy
  // tells Tier 1 nothing the first did not; a page of another group is more likely under another
  // key), then the others, each part in slot order.
  const size_t table = std::bit_ceil(2 * verify->size());
  s->seen.assign(table, 0);
  s->later.clear();
  size_t kept = 0;
  for (uint32_t slot : *verify) {
    const uint64_t key = ContentKey(slot);
    size_t h = static_cast<size_t>(key * 0x9E3779B97F4A7C15ull >> 32) & (table - 1);
    while (s->seen[h] != 0 && s->seen[h] != key) h = (h + 1) & (table - 1);
    if (s->seen[h] == key) {
      s->later.push_back(slot);
    } else {
      s->seen[h] = key;
      (*verify)[kept++] = slot;
    }
  }
  verify->resize(kept);
  verify->insert(verify->end(), s->later.begin(), s->later.end());
}

Status Shard::Impl::VerifyResident(uint32_t page, const pb::PageSignature& x, const CompareCall& call,
                                   std::span<const uint32_t> verify, bool more, Scratch* s,
                                   std::vector<ResidentMatch>* out) const {
  const double t = call.t;
  const auto xs = Shingles(x);
  const uint32_t n = static_cast<uint32_t>(xs.size());
  uint32_t found = 0;
  uint64_t done = 0;
  s->verified.clear();
  // Pass 0: the candidates found first. Pass 1, when they gave fewer than the cap and were not
  // all (more): the page probed again in full, and its candidates not verified in pass 0.
  for (int pass = 0; pass < 2; ++pass) {
    std::span<const uint32_t> list = verify;
    if (pass == 1) {
      if (!more) return Status::Ok();
      std::sort(s->verified.begin(), s->verified.end());
      ResidentCandidates(x, call, s, &s->rest, nullptr);
      list = s->rest;
    }
    for (size_t k = 0; k < list.size(); ++k) {
      const uint32_t slot = list[k];
      if (pass == 1 && std::binary_search(s->verified.begin(), s->verified.end(), slot)) continue;
      if (++done % kDeadlineEvery == 0 && call.Late()) return DeadlineExceeded("");
      if (pass == 0 && more) s->verified.push_back(slot);
      ++s->stats.verifications;
      RETURN_IF_ERROR(ReadSignature(slot, &s->value, &s->other));
      s->stats.fetched_bytes += s->value.size();
      if (call.Excluded(s->other.url(), x.url())) continue;
      const auto ys = Shingles(s->other);
      const size_t o = OverlapIfAtLeast(xs, ys, MinOverlap(n, static_cast<uint32_t>(ys.size()), t));
      if (!JaccardAtLeast(o, n, ys.size(), t)) continue;
      ++s->stats.resident_pairs;
      out->push_back(ResidentMatch{page, s->other.url(),
                                   static_cast<double>(o) / static_cast<double>(n + ys.size() - o)});
      if (call.cap > 0 && ++found == call.cap) {
        if (k + 1 < list.size() || (pass == 0 && more)) ++s->stats.capped_pages;  // candidates left unverified
        return Status::Ok();
      }
    }
  }
  return Status::Ok();
}

Status Shard::Impl::JoinBatch(std::span<const ShardPage> batch, const std::vector<uint32_t>& live,
                              const std::vector<uint32_t>& copy_of, const CompareCall& call, CompareResult* out) const {
  const double t = call.t;
  // A copy is paired with the first page of its shingles, which stands for it in the join below.
  // The pages that take part: part[p] is an index into live.
  std::vector<uint32_t> part;
  for (uint32_t l = 0; l < live.size(); ++l) {
    if (copy_of[l] == l) {
      part.push_back(l);
    } else {
      out->in_batch.push_back(BatchMatch{live[copy_of[l]], live[l], 1.0});
    }
  }
  auto sig = [&](uint32_t p) -> const pb::PageSignature& { return *batch[live[part[p]]].signature; };
  auto join_only = [&](uint32_t p) { return batch[live[part[p]]].join_only; };
  bool any_join_only = false;
  for (uint32_t p = 0; p < part.size(); ++p) any_join_only = any_join_only || join_only(p);
  JoinIndex join;
  join.Build(order_, static_cast<uint32_t>(part.size()), t, sig);
  // Each pair's shared prefix tokens are counted (count[] holds them for the page being walked,
  // partners[] which pages it met), and the positional bound drops it before any other filter.
  // The resident probe's exact filters, on each pair before its merge: length vectors, then
  // parity bitmaps (made once per page, for pages in some pair); the merge stops once the pair
  // cannot reach the overlap it needs.
  std::vector<std::optional<ParityBitmap>> bitmap(part.size());
  auto bitmap_of = [&](uint32_t p) -> const ParityBitmap& {
    if (!bitmap[p]) bitmap[p] = MakeParityBitmap(Shingles(sig(p)));
    return *bitmap[p];
  };
  const size_t d = options_.dims;
  // Under a cap, the pages the pairs kept so far connect (union-find, path halving).
  std::vector<uint32_t> parent(call.cap > 0 ? part.size() : 0);
  std::iota(parent.begin(), parent.end(), 0u);
  auto root = [&](uint32_t p) {
    while (parent[p] != p) p = parent[p] = parent[parent[p]];
    return p;
  };
  // Each pair is the later page's: Tier 1 applies it when it decides that page, and the pages a
  // join-only page meets are decided after it (it is in its group already). So a page walks its
  // partners among the pages before it and the join-only pages; two join-only pages are never
  // paired (nobody asked), and a join-only page walks none.
  std::vector<uint32_t> count(part.size(), 0), partners;
  for (uint32_t pb = 0; pb < part.size(); ++pb) {
    if (join_only(pb)) continue;
    if (call.Late()) return DeadlineExceeded("");
    partners.clear();
    for (uint32_t k = join.runs_of_page_start[pb]; k < join.runs_of_page_start[pb + 1]; ++k) {
      const uint32_t r = join.runs_of_page[k];
      for (uint32_t e = join.run_start[r]; e < join.run_start[r + 1]; ++e) {
        const uint32_t pa = join.entries[e].second;
        if (pa >= pb) {
          if (!any_join_only) break;  // a run is in page order: the rest come after pb
          if (pa == pb || !join_only(pa)) continue;
        }
        if (count[pa]++ == 0) partners.push_back(pa);
      }
    }
    const pb::PageSignature& y = sig(pb);
    const uint32_t nb = static_cast<uint32_t>(y.shingles_size());
    const SizeRange sizes = PartnerSizes(nb, t);
    uint32_t kept = 0;
    for (uint32_t pa : partners) {
      const uint32_t shared = count[pa];
      count[pa] = 0;
      const pb::PageSignature& x = sig(pa);
      const uint32_t na = static_cast<uint32_t>(x.shingles_size());
      if (na < sizes.lo || na > sizes.hi) continue;
      ++out->stats.batch_candidates;
      // Past the cap, a pair whose pages the kept pairs connect already adds nothing to the groups
      // (looked at first: in a crowd, most pairs).
      if (call.cap > 0 && kept >= call.cap && root(pa) == root(pb)) {
        ++out->stats.batch_connected;
        continue;
      }
      if (!join.PositionalAllows(pa, pb, shared, na, nb, t)) continue;
      if (static_cast<size_t>(x.shingle_vector_size()) == d && static_cast<size_t>(y.shingle_vector_size()) == d &&
          !LengthVectorsAllow(std::span<const uint32_t>(x.shingle_vector().data(), d), na,
                              std::span<const uint32_t>(y.shingle_vector().data(), d), nb, t)) {
        continue;
      }
      if (!BitmapsAllow(bitmap_of(pa).data(), na, bitmap_of(pb).data(), nb, t)) continue;
      if (++out->stats.batch_merged % kDeadlineEvery == 0 && call.Late()) return DeadlineExceeded("");
      const size_t o = OverlapIfAtLeast(Shingles(x), Shingles(y), MinOverlap(na, nb, t));
      if (JaccardAtLeast(o, na, nb, t)) {
        const uint32_t a = live[part[pa]], b = live[part[pb]];
        out->in_batch.push_back(BatchMatch{std::min(a, b), std::max(a, b),
                                           static_cast<double>(o) / static_cast<double>(na + nb - o)});
        if (call.cap > 0) {
          ++kept;
          parent[root(pa)] = root(pb);
        }
      }
    }
  }
  out->stats.batch_pairs = out->in_batch.size();
  return Status::Ok();
}

Status Shard::Impl::CompareResident(std::span<const ShardPage> batch, const Plan& plan, const CompareCall& call,
                                    const std::vector<uint32_t>& copy_of, CompareResult* out, const char** where) const {
  auto probes = [&](size_t l) { return !batch[plan.live[l]].join_only && copy_of[l] == l; };
  const int workers = static_cast<int>(std::min<size_t>(options_.threads, std::max<size_t>(plan.live.size(), 1)));
  std::vector<std::unique_ptr<Scratch>> scratch = TakeScratch(workers);
  std::vector<std::vector<ResidentMatch>> found(workers);
  std::vector<Status> errors(workers);
  std::vector<std::vector<uint32_t>> verify(plan.live.size());
  std::vector<char> more(plan.live.size(), 0);  // verify[i] is not all of page i's candidates
  ParallelFor(workers, plan.live.size(), [&](int w, size_t i) {
    if (!probes(i) || call.Late()) return;
    bool cut = false;
    ResidentCandidates(*batch[plan.live[i]].signature, call, scratch[w].get(), &verify[i], &cut);
    more[i] = cut;
  });
  if (call.Late()) {
    ReturnScratch(std::move(scratch));
    *where = "while finding candidates";
    return DeadlineExceeded("");
  }
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
    if (!errors[w].ok() || !probes(i)) return;
    if (call.Late()) {
      errors[w] = DeadlineExceeded("");
      return;
    }
    errors[w] = VerifyResident(plan.live[i], *batch[plan.live[i]].signature, call, verify[i], more[i] != 0,
                               scratch[w].get(), &found[w]);
    std::vector<uint32_t>().swap(verify[i]);  // a crowd's lists go as soon as they are done with
  });
  for (int w = 0; w < workers; ++w) {
    if (!errors[w].ok()) {
      ReturnScratch(std::move(scratch));
      *where = "while verifying candidates";
      return errors[w];
    }
    const CompareStats& s = scratch[w]->stats;
    out->stats.postings_scanned += s.postings_scanned;
    out->stats.candidates += s.candidates;
    out->stats.positional_passed += s.positional_passed;
    out->stats.verifications += s.verifications;
    out->stats.resident_pairs += s.resident_pairs;
    out->stats.fetched_bytes += s.fetched_bytes;
    out->stats.capped_pages += s.capped_pages;
    out->resident.insert(out->resident.end(), std::make_move_iterator(found[w].begin()),
                         std::make_move_iterator(found[w].end()));
  }
  ReturnScratch(std::move(scratch));
  std::sort(out->resident.begin(), out->resident.end(), [](const ResidentMatch& a, const ResidentMatch& b) {
    return a.page != b.page ? a.page < b.page : a.url < b.url;
  });
  return Status::Ok();
}

Status Shard::Impl::CompareBatch(std::span<const ShardPage> batch, double threshold, CompareResult* out,
                                 const CompareOptions& compare) const {
  *out = CompareResult{};
  if (!(threshold >= options_.min_threshold && threshold <= 1)) {
    return InvalidArgument("threshold " + std::to_string(threshold) + " is outside [" +
                           std::to_string(options_.min_threshold) + ", 1]: the shard's index is cut for " +
                           std::to_string(options_.min_threshold));
  }
  Plan plan;
  RETURN_IF_ERROR(PlanBatch(batch, &plan));
  CompareCall call;
  call.t = threshold;
  call.cap = options_.max_matches_per_page;
  call.stale.assign(compare.stale_url_hashes.begin(), compare.stale_url_hashes.end());
  std::sort(call.stale.begin(), call.stale.end());
  call.plan = &plan;
  call.deadline = compare.deadline;
  // Dropped on every error: what a compare that did not finish found is of no use to anyone.
  auto fail = [&](Status s, const char* where) {
    *out = CompareResult{};
    if (s.code() != StatusCode::kDeadlineExceeded) return s;
    return DeadlineExceeded("tier2 shard " + options_.path + ": the compare of " + std::to_string(plan.live.size()) +
                            " pages passed its deadline " + where + "; stopped there");
  };
  out->superseded = plan.superseded;
  out->empty = plan.empty;
  out->stats.pages = plan.live.size();
  const std::vector<uint32_t> copy_of = BatchCopies(batch, plan.live, call.cap, &out->stats);
  std::shared_lock lock(mu_);
  std::shared_lock loc(loc_mu_);
  const char* where = "";
  if (Status s = CompareResident(batch, plan, call, copy_of, out, &where); !s.ok()) return fail(s, where);
  if (Status s = JoinBatch(batch, plan.live, copy_of, call, out); !s.ok()) return fail(s, "in the in-batch join");
  std::sort(out->in_batch.begin(), out->in_batch.end(),
            [](const BatchMatch& a, const BatchMatch& b) { return a.a != b.a ? a.a < b.a : a.b < b.b; });
  return Status::Ok();
}

}  // namespace neardup::tier2
