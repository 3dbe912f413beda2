#include "cluster/tier2_server/tier2_messages.h"

#include <string>

namespace neardup::cluster {

std::vector<tier2::ShardPage> PagesOf(const google::protobuf::RepeatedPtrField<pb::ShardPageMsg>& m) {
  std::vector<tier2::ShardPage> pages;
  pages.reserve(static_cast<size_t>(m.size()));
  for (const pb::ShardPageMsg& p : m) {
    tier2::ShardPage page;
    page.signature = &p.signature();
    page.home = p.home();
    page.join_only = p.join_only();
    pages.push_back(page);  // not `validated`: the server checks what arrives
  }
  return pages;
}

void ToMessage(std::span<const tier2::ShardPage> pages, google::protobuf::RepeatedPtrField<pb::ShardPageMsg>* out) {
  out->Reserve(static_cast<int>(pages.size()));
  for (const tier2::ShardPage& p : pages) {
    pb::ShardPageMsg* m = out->Add();
    *m->mutable_signature() = *p.signature;
    m->set_home(p.home);
    m->set_join_only(p.join_only);
  }
}

void ToMessage(const tier2::CompareResult& r, pb::CompareResponse* out) {
  for (const auto& m : r.resident) {
    pb::ResidentMatchMsg* x = out->add_resident();
    x->set_page(m.page);
    x->set_url(m.url);
    x->set_similarity(m.similarity);
  }
  for (const auto& m : r.in_batch) {
    pb::BatchMatchMsg* x = out->add_in_batch();
    x->set_a(m.a);
    x->set_b(m.b);
    x->set_similarity(m.similarity);
  }
  out->mutable_superseded()->Add(r.superseded.begin(), r.superseded.end());
  out->mutable_empty()->Add(r.empty.begin(), r.empty.end());
  pb::CompareStatsMsg* s = out->mutable_stats();
  s->set_pages(r.stats.pages);
  s->set_postings_scanned(r.stats.postings_scanned);
  s->set_candidates(r.stats.candidates);
  s->set_positional_passed(r.stats.positional_passed);
  s->set_verifications(r.stats.verifications);
  s->set_resident_pairs(r.stats.resident_pairs);
  s->set_batch_candidates(r.stats.batch_candidates);
  s->set_batch_merged(r.stats.batch_merged);
  s->set_batch_pairs(r.stats.batch_pairs);
  s->set_fetched_bytes(r.stats.fetched_bytes);
  s->set_copies(r.stats.copies);
  s->set_capped_pages(r.stats.capped_pages);
  s->set_batch_connected(r.stats.batch_connected);
}

Status FromMessage(const pb::CompareResponse& m, size_t batch_pages, tier2::CompareResult* out) {
  *out = tier2::CompareResult{};
  auto bad = [&](const std::string& what) {
    *out = tier2::CompareResult{};
    return Corruption("tier2: a comparison's answer " + what + " (a batch of " + std::to_string(batch_pages) +
                      " pages)");
  };
  auto similarity_ok = [](double s) { return s >= 0 && s <= 1; };  // NaN fails both
  for (const auto& x : m.resident()) {
    if (x.page() >= batch_pages) return bad("names page " + std::to_string(x.page()));
    if (!similarity_ok(x.similarity())) return bad("gives a similarity of " + std::to_string(x.similarity()));
  }
  for (const auto& x : m.in_batch()) {
    if (x.a() >= x.b() || x.b() >= batch_pages) {
      return bad("pairs pages " + std::to_string(x.a()) + " and " + std::to_string(x.b()));
    }
    if (!similarity_ok(x.similarity())) return bad("gives a similarity of " + std::to_string(x.similarity()));
  }
  for (const uint32_t i : m.superseded()) {
    if (i >= batch_pages) return bad("names superseded page " + std::to_string(i));
  }
  for (const uint32_t i : m.empty()) {
    if (i >= batch_pages) return bad("names empty page " + std::to_string(i));
  }
  for (const auto& x : m.resident()) out->resident.push_back({x.page(), x.url(), x.similarity()});
  for (const auto& x : m.in_batch()) out->in_batch.push_back({x.a(), x.b(), x.similarity()});
  out->superseded.assign(m.superseded().begin(), m.superseded().end());
  out->empty.assign(m.empty().begin(), m.empty().end());
  const pb::CompareStatsMsg& s = m.stats();
  out->stats = {.pages = s.pages(),
                .copies = s.copies(),
                .capped_pages = s.capped_pages(),
                .postings_scanned = s.postings_scanned(),
                .candidates = s.candidates(),
                .positional_passed = s.positional_passed(),
                .verifications = s.verifications(),
                .resident_pairs = s.resident_pairs(),
                .batch_candidates = s.batch_candidates(),
                .batch_merged = s.batch_merged(),
                .batch_connected = s.batch_connected(),
                .batch_pairs = s.batch_pairs(),
                .fetched_bytes = s.fetched_bytes()};
  return Status::Ok();
}

void ToMessage(const tier2::ShardStats& s, pb::ShardStatsMsg* out) {
  out->set_resident_pages(s.resident_pages);
  out->set_index_postings(s.index_postings);
  out->set_index_bytes(s.index_bytes);
  out->set_index_buckets(s.index_buckets);
  out->set_page_table_bytes(s.page_table_bytes);
  out->set_compactions(s.compactions);
  out->set_rebuilds(s.rebuilds);
  out->set_token_order_bits(s.token_order_bits);
  out->set_frequent_tokens(s.frequent_tokens);
  out->set_log_bytes(s.log_bytes);
  out->set_log_live_bytes(s.log_live_bytes);
  out->set_log_compactions(s.log_compactions);
  out->set_open_seconds(s.open_seconds);
  out->set_order_refreshes(s.order_refreshes);
  out->set_refreshed_pages(s.refreshed_pages);
}

tier2::ShardStats FromMessage(const pb::ShardStatsMsg& m) {
  tier2::ShardStats s;
  s.resident_pages = m.resident_pages();
  s.index_postings = m.index_postings();
  s.index_bytes = m.index_bytes();
  s.index_buckets = m.index_buckets();
  s.page_table_bytes = m.page_table_bytes();
  s.compactions = m.compactions();
  s.rebuilds = m.rebuilds();
  s.token_order_bits = m.token_order_bits();
  s.frequent_tokens = m.frequent_tokens();
  s.log_bytes = m.log_bytes();
  s.log_live_bytes = m.log_live_bytes();
  s.log_compactions = m.log_compactions();
  s.open_seconds = m.open_seconds();
  s.order_refreshes = m.order_refreshes();
  s.refreshed_pages = m.refreshed_pages();
  return s;
}

}  // namespace neardup::cluster
