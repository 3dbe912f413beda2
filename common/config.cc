#include "common/config.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <fstream>
#include <sstream>

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
std::string Locate(const Collector& c, const std::string& name, const TextFormat::ParseInfoTree* tree,
                   const google::protobuf::Message& msg, const char* field) {
  const auto* fd = msg.GetDescriptor()->FindFieldByName(field);
  if (tree == nullptr || fd == nullptr) return name;
  const auto loc = tree->GetLocation(fd, -1);
  if (loc.line < 0) return name;
  return c.Where(loc.line, loc.column);
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
  if (!t->has_batch_pages()) t->set_batch_pages(1000);
  if (!t->has_batch_millis()) t->set_batch_millis(50);
  if (!t->has_max_batch_pages()) t->set_max_batch_pages(100000);
  if (!t->has_sync()) t->set_sync(true);
  if (!t->has_cache_mib()) t->set_cache_mib(64);
  if (!t->has_order_sample_pages()) t->set_order_sample_pages(20000);
  if (!t->has_frequent_min_pages()) t->set_frequent_min_pages(4);
}

}  // namespace

pb::NeardupConfig DefaultConfig() {
  pb::NeardupConfig c;
  FillDefaults(&c);
  return c;
}

StatusOr<pb::NeardupConfig> ParseConfig(std::string_view text, const std::string& name) {
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
  FillDefaults(&cfg);
  return cfg;
}

StatusOr<pb::NeardupConfig> LoadConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read config " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseConfig(ss.str(), path);
}

}  // namespace neardup
