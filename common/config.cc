#include "common/config.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

namespace neardup {
namespace {

using google::protobuf::TextFormat;

class Collector : public google::protobuf::io::ErrorCollector {
 public:
  explicit Collector(std::string name) : name_(std::move(name)) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (first_.empty()) first_ = Where(line, column) + ": " + message;
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  std::string Where(int line, int column) const {
    return name_ + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1);
  }
  const std::string& first() const { return first_; }

 private:
  std::string name_;
  std::string first_;
};

// Position of `field` of `msg` in the parsed text, as "file:line:col", or just the file name.
// For a repeated field, `index` picks the element (its own position when the parser recorded one,
// else the field's first element).
std::string Locate(const Collector& c, const std::string& name, const TextFormat::ParseInfoTree* tree,
                   const google::protobuf::Message& msg, const char* field, int index = -1) {
  const auto* fd = msg.GetDescriptor()->FindFieldByName(field);
  if (tree == nullptr || fd == nullptr) return name;
  auto loc = tree->GetLocation(fd, fd->is_repeated() ? std::max(index, 0) : -1);
  if (loc.line < 0 && fd->is_repeated() && index > 0) loc = tree->GetLocation(fd, 0);
  if (loc.line < 0) return name;
  return c.Where(loc.line, loc.column);
}

// The parse tree of `field` of the message `tree` describes (element `index` if repeated), or null.
const TextFormat::ParseInfoTree* Nested(const TextFormat::ParseInfoTree* tree, const google::protobuf::Message& msg,
                                        const char* field, int index = -1) {
  const auto* fd = msg.GetDescriptor()->FindFieldByName(field);
  if (tree == nullptr || fd == nullptr) return nullptr;
  return tree->GetTreeForNested(fd, fd->is_repeated() ? std::max(index, 0) : -1);
}

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

// Range checks of the tier1 section; `tree` is its parse tree.
Status CheckTier1(const Collector& collector, const std::string& name, const TextFormat::ParseInfoTree* tree,
                  const pb::Tier1Config& t1) {
  auto bad = [&](const char* field, const std::string& rule, const std::string& got, int index = -1) {
    return InvalidArgument(Locate(collector, name, tree, t1, field, index) + ": tier1." + field + ": " + rule +
                           " (got " + got + ")");
  };
  std::vector<int> seen;
  for (int i = 0; i < t1.winner_rules_size(); ++i) {
    const int r = t1.winner_rules(i);
    const auto* value = pb::WinnerRule_descriptor()->FindValueByNumber(r);
    const std::string got = value != nullptr ? value->name() : std::to_string(r);
    if (r == pb::WINNER_RULE_UNSPECIFIED || !pb::WinnerRule_IsValid(r)) {
      return bad("winner_rules", "must be one of POPULARITY, STATIC, SHORTER, MARKET", got, i);
    }
    if (std::find(seen.begin(), seen.end(), r) != seen.end()) {
      return bad("winner_rules", "each rule at most once", got + " again", i);
    }
    seen.push_back(r);
  }
  const double b = t1.popularity_buckets_per_doubling();
  if (t1.has_popularity_buckets_per_doubling() && !(b > 0 && b <= 1000)) {
    return bad("popularity_buckets_per_doubling", "must be in (0, 1000]", std::to_string(b));
  }
  const double share = t1.repair_rejection_share();
  if (t1.has_repair_rejection_share() && !(share > 0 && share <= 1)) {
    return bad("repair_rejection_share", "must be in (0, 1]", std::to_string(share));
  }
  if (t1.has_repair_min_rejections() && t1.repair_min_rejections() < 1) {
    return bad("repair_min_rejections", "must be at least 1", std::to_string(t1.repair_min_rejections()));
  }
  if (t1.has_winner_hysteresis_buckets() && t1.winner_hysteresis_buckets() > 1000) {
    return bad("winner_hysteresis_buckets", "must be in 0..1000", std::to_string(t1.winner_hysteresis_buckets()));
  }
  if (t1.has_repair_max_members() && t1.repair_max_members() < 2) {
    return bad("repair_max_members", "must be at least 2", std::to_string(t1.repair_max_members()));
  }
  for (int i = 0; i < t1.market_suffix_size(); ++i) {
    const pb::MarketSuffix& ms = t1.market_suffix(i);
    const auto* ms_tree = Nested(tree, t1, "market_suffix", i);
    // Inside an element: the subfield's position, else the element's.
    auto bad_in = [&](const char* field, const std::string& rule, const std::string& got, int index = -1) {
      std::string where = Locate(collector, name, ms_tree, ms, field, index);
      if (where == name) where = Locate(collector, name, tree, t1, "market_suffix", i);
      return InvalidArgument(where + ": tier1.market_suffix." + field + ": " + rule + " (got " + got + ")");
    };
    if (ms.market().empty()) return bad_in("market", "must not be empty", "\"\"");
    for (int j = 0; j < i; ++j) {
      if (t1.market_suffix(j).market() == ms.market()) {
        return bad_in("market", "each market at most once", Quoted(ms.market()) + " again");
      }
    }
    if (ms.suffix_size() == 0) return bad_in("suffix", "at least one suffix per market", "none");
    for (int j = 0; j < ms.suffix_size(); ++j) {
      const std::string& suffix = ms.suffix(j);
      if (suffix.size() < 2 || suffix.front() != '.') {
        return bad_in("suffix", "must start with \".\" and name a domain, e.g. \".co.uk\"", Quoted(suffix), j);
      }
    }
  }
  return Status::Ok();
}

// Range checks of the pipeline section; `tree` is its parse tree.
Status CheckPipeline(const Collector& collector, const std::string& name, const TextFormat::ParseInfoTree* tree,
                     const pb::PipelineConfig& p) {
  auto bad = [&](const char* field, const std::string& rule, const std::string& got) {
    return InvalidArgument(Locate(collector, name, tree, p, field) + ": pipeline." + field + ": " + rule + " (got " +
                           got + ")");
  };
  if (p.has_shards() && (p.shards() < 1 || p.shards() > 1024)) {
    return bad("shards", "must be in 1..1024", std::to_string(p.shards()));
  }
  if (p.has_routing() && p.routing() != "exact" && p.routing() != "rho") {
    return bad("routing", "must be \"exact\" or \"rho\"", Quoted(p.routing()));
  }
  if (p.has_rho() && !(p.rho() >= 1 && p.rho() <= 10)) {
    return bad("rho", "must be in [1, 10]", std::to_string(p.rho()));
  }
  if (p.has_map_sample_rate() && !(p.map_sample_rate() > 0 && p.map_sample_rate() <= 1)) {
    return bad("map_sample_rate", "must be in (0, 1]", std::to_string(p.map_sample_rate()));
  }
  if (p.has_cells_per_shard() && (p.cells_per_shard() < 1 || p.cells_per_shard() > 64)) {
    return bad("cells_per_shard", "must be in 1..64", std::to_string(p.cells_per_shard()));
  }
  if (p.has_background_nice() && p.background_nice() > 19) {
    return bad("background_nice", "must be in 0..19", std::to_string(p.background_nice()));
  }
  if (p.has_shard_load_base() && !(p.shard_load_base() >= 0 && p.shard_load_base() <= 1e9)) {
    return bad("shard_load_base", "must be in [0, 1e9]", std::to_string(p.shard_load_base()));
  }
  return Status::Ok();
}

void FillDefaults(pb::NeardupConfig* c) {
  auto* s = c->mutable_shingle();
  if (!s->has_k()) s->set_k(5);
  if (!s->has_dims()) s->set_dims(3);
  auto* r = c->mutable_reader();
  if (!r->has_max_line_bytes()) r->set_max_line_bytes(8ull << 20);
  auto* b = c->mutable_baseline();
  if (!b->has_threshold()) b->set_threshold(0.9);
  if (!b->has_threads()) b->set_threads(0);
  auto* t = c->mutable_tier2();
  if (!t->has_min_threshold()) t->set_min_threshold(0.8);
  if (!t->has_prefix_overlap()) t->set_prefix_overlap(2);
  if (!t->has_batch_pages()) t->set_batch_pages(2000);
  if (!t->has_batch_millis()) t->set_batch_millis(50);
  if (!t->has_max_batch_pages()) t->set_max_batch_pages(100000);
  if (!t->has_sync()) t->set_sync(true);
  if (!t->has_order_sample_pages()) t->set_order_sample_pages(20000);
  if (!t->has_frequent_min_pages()) t->set_frequent_min_pages(4);
  auto* t1 = c->mutable_tier1();
  if (t1->winner_rules_size() == 0) {
    for (const auto rule : {pb::MARKET, pb::POPULARITY, pb::STATIC, pb::SHORTER}) t1->add_winner_rules(rule);
  }
  if (!t1->has_popularity_buckets_per_doubling()) t1->set_popularity_buckets_per_doubling(4);
  if (!t1->has_winner_hysteresis_buckets()) t1->set_winner_hysteresis_buckets(1);
  if (!t1->has_repair_rejection_share()) t1->set_repair_rejection_share(0.2);
  if (!t1->has_repair_min_rejections()) t1->set_repair_min_rejections(2);
  if (!t1->has_repair_max_members()) t1->set_repair_max_members(5000);
  if (!t1->has_fast_path()) t1->set_fast_path(true);
  if (!t1->has_sync()) t1->set_sync(true);
  if (!t1->has_cache_mib()) t1->set_cache_mib(32);
  if (!t1->has_cache_records()) t1->set_cache_records(1u << 21);
  if (!t1->has_compress()) t1->set_compress(false);
  auto* p = c->mutable_pipeline();
  if (!p->has_shards()) p->set_shards(4);
  if (!p->has_routing()) p->set_routing("exact");
  if (!p->has_rho()) p->set_rho(1.0);
  if (!p->has_map_sample_rate()) p->set_map_sample_rate(0.05);
  if (!p->has_cells_per_shard()) p->set_cells_per_shard(6);
  if (!p->has_background_nice()) p->set_background_nice(10);
  if (!p->has_shard_load_base()) p->set_shard_load_base(800);
}

}  // namespace

pb::NeardupConfig DefaultConfig() {
  pb::NeardupConfig c;
  FillDefaults(&c);
  return c;
}

StatusOr<pb::NeardupConfig> ParseConfig(std::string_view text, const std::string& name, pb::NeardupConfig* as_written) {
  pb::NeardupConfig cfg;
  Collector collector(name);
  TextFormat::ParseInfoTree info;
  TextFormat::Parser parser;
  parser.RecordErrorsTo(&collector);
  parser.WriteLocationsTo(&info);
  if (!parser.ParseFromString(std::string(text), &cfg)) {
    return InvalidArgument(collector.first().empty() ? name + ": cannot parse" : collector.first());
  }
  // Range checks, reported at the field's own position. A field left out takes its default.
  const auto* shingle_tree = cfg.has_shingle()
      ? info.GetTreeForNested(cfg.GetDescriptor()->FindFieldByName("shingle"), -1) : nullptr;
  const auto* baseline_tree = cfg.has_baseline()
      ? info.GetTreeForNested(cfg.GetDescriptor()->FindFieldByName("baseline"), -1) : nullptr;
  const auto* reader_tree = cfg.has_reader()
      ? info.GetTreeForNested(cfg.GetDescriptor()->FindFieldByName("reader"), -1) : nullptr;
  if (cfg.shingle().has_k() && (cfg.shingle().k() < 1 || cfg.shingle().k() > 16)) {
    return InvalidArgument(Locate(collector, name, shingle_tree, cfg.shingle(), "k") +
                           ": shingle.k: must be in 1..16 (got " + std::to_string(cfg.shingle().k()) + ")");
  }
  if (cfg.shingle().has_dims() && (cfg.shingle().dims() < 1 || cfg.shingle().dims() > 16)) {
    return InvalidArgument(Locate(collector, name, shingle_tree, cfg.shingle(), "dims") +
                           ": shingle.dims: must be in 1..16 (got " + std::to_string(cfg.shingle().dims()) + ")");
  }
  const double t = cfg.baseline().threshold();
  if (cfg.baseline().has_threshold() && !(t > 0 && t <= 1)) {
    return InvalidArgument(Locate(collector, name, baseline_tree, cfg.baseline(), "threshold") +
                           ": baseline.threshold: must be in (0, 1] (got " + std::to_string(t) + ")");
  }
  if (cfg.reader().has_max_line_bytes() && cfg.reader().max_line_bytes() < 1024) {
    return InvalidArgument(Locate(collector, name, reader_tree, cfg.reader(), "max_line_bytes") +
                           ": reader.max_line_bytes: must be at least 1024 (got " +
                           std::to_string(cfg.reader().max_line_bytes()) + ")");
  }
  if (cfg.has_tier2()) {
    const auto* tree = info.GetTreeForNested(cfg.GetDescriptor()->FindFieldByName("tier2"), -1);
    const pb::Tier2Config& t2 = cfg.tier2();
    auto bad = [&](const char* field, const std::string& rule, const std::string& got) {
      return InvalidArgument(Locate(collector, name, tree, t2, field) + ": tier2." + field + ": " + rule + " (got " +
                             got + ")");
    };
    if (t2.has_min_threshold() && !(t2.min_threshold() > 0 && t2.min_threshold() <= 1)) {
      return bad("min_threshold", "must be in (0, 1]", std::to_string(t2.min_threshold()));
    }
    if (t2.has_prefix_overlap() && (t2.prefix_overlap() < 1 || t2.prefix_overlap() > 64)) {
      return bad("prefix_overlap", "must be in 1..64", std::to_string(t2.prefix_overlap()));
    }
    if (t2.has_max_batch_pages() && t2.max_batch_pages() < 1) {
      return bad("max_batch_pages", "must be at least 1", std::to_string(t2.max_batch_pages()));
    }
    const uint32_t max_batch = t2.has_max_batch_pages() ? t2.max_batch_pages() : 100000;
    if (t2.has_batch_pages() && (t2.batch_pages() < 1 || t2.batch_pages() > max_batch)) {
      return bad("batch_pages", "must be in 1..max_batch_pages (" + std::to_string(max_batch) + ")",
                 std::to_string(t2.batch_pages()));
    }
    if (t2.has_batch_millis() && t2.batch_millis() < 1) {
      return bad("batch_millis", "must be at least 1", std::to_string(t2.batch_millis()));
    }
    if (t2.has_frequent_min_pages() && t2.frequent_min_pages() < 1) {
      return bad("frequent_min_pages", "must be at least 1", std::to_string(t2.frequent_min_pages()));
    }
  }
  if (cfg.has_tier1()) {
    const auto* tree = info.GetTreeForNested(cfg.GetDescriptor()->FindFieldByName("tier1"), -1);
    if (Status st = CheckTier1(collector, name, tree, cfg.tier1()); !st.ok()) return st;
  }
  if (cfg.has_pipeline()) {
    const auto* tree = info.GetTreeForNested(cfg.GetDescriptor()->FindFieldByName("pipeline"), -1);
    if (Status st = CheckPipeline(collector, name, tree, cfg.pipeline()); !st.ok()) return st;
  }
  if (as_written != nullptr) *as_written = cfg;
  FillDefaults(&cfg);
  return cfg;
}

StatusOr<pb::NeardupConfig> LoadConfig(const std::string& path, pb::NeardupConfig* as_written) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read config " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseConfig(ss.str(), path, as_written);
}

}  // namespace neardup
