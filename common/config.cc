#include "common/config.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

namespace neardup {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
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

[[noreturn]] void SchemaError(const std::string& message) {
  std::fprintf(stderr, "proto/config.proto: %s\n", message.c_str());
  std::abort();
}

// --- Declared ranges: the (min), (max), (min_exclusive), (max_exclusive) field options. ---

struct Range {
  bool has_min = false, has_max = false;
  double min = 0, max = 0;
  bool min_exclusive = false, max_exclusive = false;
};

Range DeclaredRange(const FieldDescriptor& f) {
  const auto& o = f.options();
  Range r;
  r.has_min = o.HasExtension(pb::min);
  r.has_max = o.HasExtension(pb::max);
  r.min = o.GetExtension(pb::min);
  r.max = o.GetExtension(pb::max);
  r.min_exclusive = o.GetExtension(pb::min_exclusive);
  r.max_exclusive = o.GetExtension(pb::max_exclusive);
  return r;
}

bool HasDeclaredRange(const FieldDescriptor& f) {
  return f.options().HasExtension(pb::min) || f.options().HasExtension(pb::max);
}

bool IsIntegral(const FieldDescriptor& f) {
  switch (f.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64:
      return true;
    default:
      return false;
  }
}

// A bound as the range's text shows it: the shortest form that reads back the same, an exponent
// without "+" or leading zeros (16, 0.5, 1e9).
std::string FormatBound(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, ec == std::errc() ? end : buf);
  if (const size_t e = s.find('e'); e != std::string::npos) {
    size_t i = e + 1;
    const bool negative = s[i] == '-';
    if (s[i] == '+' || s[i] == '-') ++i;
    while (i + 1 < s.size() && s[i] == '0') ++i;
    s = s.substr(0, e + 1) + (negative ? "-" : "") + s.substr(i);
  }
  return s;
}

// "in 1..64" or "at least 1" for an integer field, "in (0, 1]" for a floating-point one; "" without
// a declared range.
std::string RangeText(const FieldDescriptor& f) {
  const Range r = DeclaredRange(f);
  const bool dots = IsIntegral(f) && !r.min_exclusive && !r.max_exclusive;
  if (r.has_min && r.has_max) {
    if (dots) return "in " + FormatBound(r.min) + ".." + FormatBound(r.max);
    return std::string("in ") + (r.min_exclusive ? "(" : "[") + FormatBound(r.min) + ", " + FormatBound(r.max) +
           (r.max_exclusive ? ")" : "]");
  }
  if (r.has_min) return (r.min_exclusive ? "greater than " : "at least ") + FormatBound(r.min);
  if (r.has_max) return (r.max_exclusive ? "less than " : "at most ") + FormatBound(r.max);
  return "";
}

// Whether `v` lies in the field's declared range (NaN lies in none).
bool InRange(const FieldDescriptor& f, double v) {
  const Range r = DeclaredRange(f);
  if (r.has_min && !(r.min_exclusive ? v > r.min : v >= r.min)) return false;
  if (r.has_max && !(r.max_exclusive ? v < r.max : v <= r.max)) return false;
  return true;
}

std::string RangeError(const FieldDescriptor& f, double v) {
  return InRange(f, v) ? std::string() : "must be " + RangeText(f);
}

template <typename T>
std::pair<double, std::string> Number(T v) {
  return {static_cast<double>(v), std::to_string(v)};
}

// The value of number field `f` of `m` (element `index` when repeated), and as errors print it.
std::pair<double, std::string> NumberOf(const Message& m, const FieldDescriptor& f, int index) {
  const Reflection& r = *m.GetReflection();
  const bool rep = f.is_repeated();
  switch (f.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: return Number(rep ? r.GetRepeatedInt32(m, &f, index) : r.GetInt32(m, &f));
    case FieldDescriptor::CPPTYPE_INT64: return Number(rep ? r.GetRepeatedInt64(m, &f, index) : r.GetInt64(m, &f));
    case FieldDescriptor::CPPTYPE_UINT32: return Number(rep ? r.GetRepeatedUInt32(m, &f, index) : r.GetUInt32(m, &f));
    case FieldDescriptor::CPPTYPE_UINT64: return Number(rep ? r.GetRepeatedUInt64(m, &f, index) : r.GetUInt64(m, &f));
    case FieldDescriptor::CPPTYPE_DOUBLE: return Number(rep ? r.GetRepeatedDouble(m, &f, index) : r.GetDouble(m, &f));
    case FieldDescriptor::CPPTYPE_FLOAT: return Number(rep ? r.GetRepeatedFloat(m, &f, index) : r.GetFloat(m, &f));
    default: SchemaError(f.full_name() + " declares a range but is not a number");
  }
}

// The declared ranges of the fields set in `msg` (and in the messages it holds), each reported at
// its field's position as "<prefix><field>: must be in 1..16 (got 40)". `tree` is msg's parse tree.
Status CheckDeclaredRanges(const Collector& collector, const std::string& name, const TextFormat::ParseInfoTree* tree,
                           const Message& msg, const std::string& prefix) {
  const Reflection& r = *msg.GetReflection();
  const Descriptor& d = *msg.GetDescriptor();
  for (int i = 0; i < d.field_count(); ++i) {
    const FieldDescriptor& f = *d.field(i);
    const bool nested = f.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;
    if (!nested && !HasDeclaredRange(f)) continue;
    const int n = f.is_repeated() ? r.FieldSize(msg, &f) : r.HasField(msg, &f) ? 1 : 0;
    const int index = f.is_repeated() ? 0 : -1;  // + j: element j of a repeated field
    for (int j = 0; j < n; ++j) {
      if (nested) {
        const Message& sub = f.is_repeated() ? r.GetRepeatedMessage(msg, &f, j) : r.GetMessage(msg, &f);
        const TextFormat::ParseInfoTree* sub_tree = tree == nullptr ? nullptr : tree->GetTreeForNested(&f, index + j);
        RETURN_IF_ERROR(CheckDeclaredRanges(collector, name, sub_tree, sub, prefix + f.name() + "."));
        continue;
      }
      const auto [value, got] = NumberOf(msg, f, index + j);
      if (const std::string rule = RangeError(f, value); !rule.empty()) {
        return InvalidArgument(Locate(collector, name, tree, msg, f.name().c_str(), index + j) + ": " + prefix +
                               f.name() + ": " + rule + " (got " + got + ")");
      }
    }
  }
  return Status::Ok();
}

// --- Declared defaults: the (default_value) field option. ---

// Sets every field of `msg` that declares a default to it, and likewise in its singular message
// fields. A default that does not parse as its field's value aborts (config_test builds them all).
void SetDeclaredDefaults(Message* msg) {
  const Reflection& r = *msg->GetReflection();
  const Descriptor& d = *msg->GetDescriptor();
  for (int i = 0; i < d.field_count(); ++i) {
    const FieldDescriptor& f = *d.field(i);
    if (f.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !f.is_repeated()) {
      SetDeclaredDefaults(r.MutableMessage(msg, &f));
      continue;
    }
    if (!f.options().HasExtension(pb::default_value)) continue;
    const std::string& text = f.options().GetExtension(pb::default_value);
    if (f.cpp_type() == FieldDescriptor::CPPTYPE_STRING && !f.is_repeated()) {
      r.SetString(msg, &f, text);
      continue;
    }
    Collector collector(f.full_name() + " (default_value)");
    TextFormat::Parser parser;
    parser.RecordErrorsTo(&collector);
    if (!parser.MergeFromString(f.name() + ": " + text, msg)) {
      SchemaError("the default \"" + text + "\" of " + f.full_name() + " does not parse: " + collector.first());
    }
  }
}

// Moves into `msg` each field it lacks (a repeated one: has no element) from `defaults`, and
// likewise in its singular message fields. `defaults` is a copy of ConfigDefaults(), used up.
void TakeDefaults(Message* msg, Message* defaults) {
  const Reflection& r = *msg->GetReflection();
  const Descriptor& d = *msg->GetDescriptor();
  std::vector<const FieldDescriptor*> missing;
  for (int i = 0; i < d.field_count(); ++i) {
    const FieldDescriptor& f = *d.field(i);
    if (f.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !f.is_repeated()) {
      TakeDefaults(r.MutableMessage(msg, &f), r.MutableMessage(defaults, &f));
    } else if (f.is_repeated() ? r.FieldSize(*msg, &f) == 0 : !r.HasField(*msg, &f)) {
      missing.push_back(&f);
    }
  }
  r.SwapFields(msg, defaults, missing);
}

const FieldDescriptor& FieldAt(std::string_view path) {
  const Descriptor* d = pb::NeardupConfig::descriptor();
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string name(path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    const FieldDescriptor* f = d == nullptr ? nullptr : d->FindFieldByName(name);
    if (f == nullptr) SchemaError(std::string(path) + " is not a field of neardup.pb.NeardupConfig");
    if (dot == std::string_view::npos) return *f;
    d = f->message_type();
    start = dot + 1;
  }
}

// --- The rules that are not a range of one field. ---

// batch_pages against max_batch_pages; `tree` is the tier2 section's parse tree.
Status CheckTier2(const Collector& collector, const std::string& name, const TextFormat::ParseInfoTree* tree,
                  const pb::Tier2Config& t2) {
  const uint32_t max_batch = t2.has_max_batch_pages() ? t2.max_batch_pages() : ConfigDefaults().tier2().max_batch_pages();
  if (t2.has_batch_pages() && (t2.batch_pages() < 1 || t2.batch_pages() > max_batch)) {
    return InvalidArgument(Locate(collector, name, tree, t2, "batch_pages") +
                           ": tier2.batch_pages: must be in 1..max_batch_pages (" + std::to_string(max_batch) +
                           ") (got " + std::to_string(t2.batch_pages()) + ")");
  }
  return Status::Ok();
}

// Winner rules and market suffixes of the tier1 section; `tree` is its parse tree.
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

// The routing of the pipeline section; `tree` is its parse tree.
Status CheckPipeline(const Collector& collector, const std::string& name, const TextFormat::ParseInfoTree* tree,
                     const pb::PipelineConfig& p) {
  if (p.has_routing() && p.routing() != "exact" && p.routing() != "rho") {
    return InvalidArgument(Locate(collector, name, tree, p, "routing") + ": pipeline.routing: must be \"exact\" or \"rho\" (got " +
                           Quoted(p.routing()) + ")");
  }
  return Status::Ok();
}

// The email section's names: its mode and its aggregators (their names are checked against the
// registry when the module starts; here only that each is given once and not empty).
Status CheckEmail(const Collector& collector, const std::string& name, const TextFormat::ParseInfoTree* tree,
                  const pb::EmailConfig& e) {
  if (e.has_mode() && e.mode() != "verified" && e.mode() != "paper") {
    return InvalidArgument(Locate(collector, name, tree, e, "mode") + ": email.mode: must be \"verified\" or \"paper\" (got " +
                           Quoted(e.mode()) + ")");
  }
  for (int i = 0; i < e.udcas_size(); ++i) {
    if (e.udcas(i).empty()) {
      return InvalidArgument(Locate(collector, name, tree, e, "udcas", i) + ": email.udcas: must not be empty (got \"\")");
    }
    for (int j = 0; j < i; ++j) {
      if (e.udcas(j) == e.udcas(i)) {
        return InvalidArgument(Locate(collector, name, tree, e, "udcas", i) + ": email.udcas: each at most once (got " +
                               Quoted(e.udcas(i)) + " again)");
      }
    }
  }
  return Status::Ok();
}

pb::NeardupConfig BuildDefaults() {
  pb::NeardupConfig c;
  SetDeclaredDefaults(&c);
  return c;
}

}  // namespace

const pb::NeardupConfig& ConfigDefaults() {
  static const pb::NeardupConfig* const defaults = new pb::NeardupConfig(BuildDefaults());
  return *defaults;
}

pb::NeardupConfig DefaultConfig() { return ConfigDefaults(); }

std::string ConfigRange(std::string_view path) { return RangeText(FieldAt(path)); }

std::string ConfigRangeError(std::string_view path, double value) { return RangeError(FieldAt(path), value); }

std::string ConfigDefaultText(std::string_view path) {
  return FieldAt(path).options().GetExtension(pb::default_value);
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
  // Checks of the fields given, reported at the field's own position (a field left out takes its
  // default): first every declared range, then the rules that are not one field's range.
  RETURN_IF_ERROR(CheckDeclaredRanges(collector, name, &info, cfg, ""));
  auto tree = [&](const char* section) {
    return info.GetTreeForNested(cfg.GetDescriptor()->FindFieldByName(section), -1);
  };
  if (cfg.has_tier2()) RETURN_IF_ERROR(CheckTier2(collector, name, tree("tier2"), cfg.tier2()));
  if (cfg.has_tier1()) RETURN_IF_ERROR(CheckTier1(collector, name, tree("tier1"), cfg.tier1()));
  if (cfg.has_pipeline()) RETURN_IF_ERROR(CheckPipeline(collector, name, tree("pipeline"), cfg.pipeline()));
  if (cfg.has_email()) RETURN_IF_ERROR(CheckEmail(collector, name, tree("email"), cfg.email()));
  if (as_written != nullptr) *as_written = cfg;
  pb::NeardupConfig defaults = ConfigDefaults();
  TakeDefaults(&cfg, &defaults);
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
