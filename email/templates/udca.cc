#include "email/templates/udca.h"

#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <unordered_map>

#include "common/json_write.h"
#include "document/tokenizer.h"

namespace neardup::email {
namespace {

std::string JsonString(std::string_view s) {
  std::string out;
  AppendJsonString(&out, s);
  return out;
}

// --- fixed_text ---

class FixedTextUdca : public Udca {
 public:
  static constexpr size_t kMaxBlocks = 200;
  std::string_view name() const override { return "fixed_text"; }
  std::string Aggregate(std::span<const pb::StoredEmail* const> emails) const override {
    // (xpath, text) of the first email kept when every other email has it too.
    std::unordered_map<std::string, int> seen;  // xpath + '\0' + text -> emails having it
    for (const pb::StoredEmail* e : emails) {
      std::unordered_map<std::string, bool> mine;
      for (const auto& b : e->blocks()) mine.emplace(b.xpath() + '\0' + b.text(), true);
      for (const auto& [key, unused] : mine) ++seen[key];
    }
    std::string out = "[";
    size_t n = 0;
    for (const auto& b : emails.front()->blocks()) {
      auto it = seen.find(b.xpath() + '\0' + b.text());
      if (it == seen.end() || it->second < static_cast<int>(emails.size())) continue;
      it->second = -1;  // once
      if (n++ > 0) out += ',';
      out += JsonString(b.text());
      if (n == kMaxBlocks) break;
    }
    return out + "]";
  }
};

// --- date_format ---

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

class DateFormatUdca : public Udca {
 public:
  std::string_view name() const override { return "date_format"; }
  std::string Aggregate(std::span<const pb::StoredEmail* const> emails) const override {
    int dm = 0, md = 0;
    for (const pb::StoredEmail* e : emails) {
      for (const auto& b : e->blocks()) Count(b.text(), &dm, &md);
      Count(e->subject(), &dm, &md);
    }
    const char* order = dm > md ? "D/M" : md > dm ? "M/D" : "unknown";
    return std::string("{\"order\":\"") + order + "\",\"day_first\":" + std::to_string(dm) +
           ",\"month_first\":" + std::to_string(md) + "}";
  }
  std::string Apply(std::string_view annotation, const pb::StoredEmail& email) const override {
    const bool day_first = annotation.find("\"order\":\"D/M\"") != std::string_view::npos;
    const bool month_first = annotation.find("\"order\":\"M/D\"") != std::string_view::npos;
    if (!day_first && !month_first) return "";
    std::string out = "[";
    int n = 0;
    for (const auto& b : email.blocks()) {
      for (const NumericDate& d : FindNumericDates(b.text())) {
        const int day = day_first ? d.a : d.b, month = day_first ? d.b : d.a;
        if (day < 1 || day > 31 || month < 1 || month > 12) continue;
        char buf[16];
        std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", d.year, month, day);
        if (n++ > 0) out += ',';
        out += JsonString(buf);
      }
    }
    return n == 0 ? "" : out + "]";
  }

 private:
  static void Count(std::string_view text, int* dm, int* md) {
    for (const NumericDate& d : FindNumericDates(text)) {
      if (d.a > 12 && d.a <= 31 && d.b >= 1 && d.b <= 12) ++*dm;
      if (d.b > 12 && d.b <= 31 && d.a >= 1 && d.a <= 12) ++*md;
    }
  }
};

// --- vertical ---

struct VerticalKeywords {
  const char* label;
  std::vector<std::string> words;
};

const std::vector<VerticalKeywords>& Verticals() {
  static const auto* v = new std::vector<VerticalKeywords>{
      {"receipt", {"receipt", "purchase", "order", "paid", "total", "thanks", "amount"}},
      {"shipping", {"shipped", "shipping", "tracking", "delivery", "delivered", "package", "carrier"}},
      {"bill", {"invoice", "bill", "due", "payment", "balance", "charge", "overdue", "billing"}},
      {"hotel", {"hotel", "reservation", "room", "stay", "checkin", "checkout", "guest", "booking"}},
      {"password_reset", {"password", "reset", "forgot", "recover", "account", "security"}},
      {"newsletter", {"newsletter", "unsubscribe", "weekly", "digest", "update", "highlights", "read"}},
  };
  return *v;
}

class VerticalUdca : public Udca {
 public:
  explicit VerticalUdca(double threshold) : threshold_(threshold) {}
  std::string_view name() const override { return "vertical"; }
  std::string Aggregate(std::span<const pb::StoredEmail* const> emails) const override {
    std::map<std::string, int> votes;
    for (const pb::StoredEmail* e : emails) {
      const std::string label = ClassifyVertical(*e);
      if (!label.empty()) ++votes[label];
    }
    std::string best;
    int best_votes = 0;
    for (const auto& [label, n] : votes) {
      if (n > best_votes) best = label, best_votes = n;
    }
    const double share = static_cast<double>(best_votes) / static_cast<double>(emails.size());
    std::string out = "{\"label\":";
    out += share >= threshold_ && !best.empty() ? JsonString(best) : "null";
    out += ",\"share\":";
    AppendJsonNumber(&out, share);
    return out + "}";
  }
  std::string Apply(std::string_view annotation, const pb::StoredEmail&) const override {
    const size_t p = annotation.find("\"label\":");
    if (p == std::string_view::npos) return "";
    const std::string_view rest = annotation.substr(p + 8);
    if (rest.rfind("null", 0) == 0) return "";
    const size_t end = rest.find('"', 1);
    return end == std::string_view::npos ? "" : std::string(rest.substr(0, end + 1));
  }

 private:
  double threshold_;
};

// --- field_extraction ---

// Field scores of one text block, in [0, 1].
double DateScore(std::string_view t) {
  if (t.size() > 80) return 0.0;
  if (!FindNumericDates(t).empty()) return 1.0;
  static const char* kMonths[] = {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"};
  const auto words = Tokenize(t);
  bool month = false, number = false;
  for (const auto& w : words) {
    for (const char* m : kMonths) month |= w.rfind(m, 0) == 0 && w.size() <= 9;
    number |= !w.empty() && std::all_of(w.begin(), w.end(), IsDigit);
  }
  return month && number && words.size() <= 8 ? 0.8 : 0.0;
}

double PriceScore(std::string_view t) {
  if (t.size() > 40) return 0.0;
  const bool currency = t.find('$') != std::string_view::npos || t.find("\xE2\x82\xAC") != std::string_view::npos ||
                        t.find("\xC2\xA3") != std::string_view::npos || t.find("USD") != std::string_view::npos ||
                        t.find("EUR") != std::string_view::npos;
  bool decimal = false;
  for (size_t i = 1; i + 1 < t.size(); ++i) {
    if ((t[i] == '.' || t[i] == ',') && IsDigit(t[i - 1]) && IsDigit(t[i + 1])) decimal = true;
  }
  return currency && decimal ? 1.0 : decimal ? 0.3 : 0.0;
}

double OrderNumberScore(std::string_view t) {
  // A short block with a code: a token of at least 5 characters mixing digits with letters, '#'
  // or '-', or a number of 6 digits or more.
  if (t.size() > 60) return 0.0;
  size_t i = 0;
  double best = 0;
  while (i < t.size()) {
    while (i < t.size() && std::isspace(static_cast<unsigned char>(t[i]))) ++i;
    size_t j = i;
    int digits = 0, letters = 0, marks = 0;
    while (j < t.size() && !std::isspace(static_cast<unsigned char>(t[j]))) {
      const char c = t[j];
      if (IsDigit(c)) ++digits;
      else if (std::isalpha(static_cast<unsigned char>(c))) ++letters;
      else if (c == '#' || c == '-') ++marks;
      ++j;
    }
    const int len = static_cast<int>(j - i);
    const bool has_decimal = std::string_view(t.substr(i, j - i)).find_first_of(".,") != std::string_view::npos;
    if (!has_decimal && len >= 5 && digits >= 2 && (letters > 0 || marks > 0)) best = std::max(best, 1.0);
    if (!has_decimal && digits >= 6 && letters == 0) best = std::max(best, 0.8);
    i = j;
  }
  return best;
}

double EmailAddressScore(std::string_view t) {
  const size_t at = t.find('@');
  return at != std::string_view::npos && at > 0 && t.find('.', at) != std::string_view::npos && t.size() <= 80 ? 1.0 : 0.0;
}

struct Field {
  const char* name;
  double (*score)(std::string_view);
};

constexpr Field kFields[] = {{"date", DateScore}, {"price", PriceScore}, {"order_number", OrderNumberScore},
                             {"email_address", EmailAddressScore}};

class FieldExtractionUdca : public Udca {
 public:
  static constexpr double kMinScore = 0.5;
  std::string_view name() const override { return "field_extraction"; }
  std::string Aggregate(std::span<const pb::StoredEmail* const> emails) const override {
    std::string out = "{";
    int n = 0;
    for (const Field& f : kFields) {
      // Sum over emails of the best score of each XPath in the email.
      std::unordered_map<std::string, double> sum;
      for (const pb::StoredEmail* e : emails) {
        std::unordered_map<std::string, double> mine;
        for (const auto& b : e->blocks()) {
          const double s = f.score(b.text());
          if (s > 0) mine[b.xpath()] = std::max(mine[b.xpath()], s);
        }
        for (const auto& [x, s] : mine) sum[x] += s;
      }
      std::string best;
      double best_avg = 0;
      for (const auto& [x, s] : sum) {
        const double avg = s / static_cast<double>(emails.size());
        if (avg > best_avg || (avg == best_avg && x < best)) best = x, best_avg = avg;
      }
      if (best_avg < kMinScore) continue;
      if (n++ > 0) out += ',';
      out += JsonString(f.name) + ":{\"xpath\":" + JsonString(best) + ",\"score\":";
      AppendJsonNumber(&out, best_avg);
      out += '}';
    }
    return out + "}";
  }
  std::string Apply(std::string_view annotation, const pb::StoredEmail& email) const override {
    simdjson::dom::parser parser;
    simdjson::dom::object rules;
    if (parser.parse(annotation.data(), annotation.size(), true).get_object().get(rules) != simdjson::SUCCESS) return "";
    std::string out = "{";
    int n = 0;
    for (auto [field, rule] : rules) {
      std::string_view xpath;
      if (rule["xpath"].get_string().get(xpath) != simdjson::SUCCESS) continue;
      for (const auto& b : email.blocks()) {
        if (b.xpath() != xpath) continue;
        if (n++ > 0) out += ',';
        out += JsonString(field) + ":" + JsonString(b.text());
        break;
      }
    }
    return n == 0 ? "" : out + "}";
  }
};

template <typename T>
UdcaFactory Simple() {
  return [](const pb::EmailConfig&) -> StatusOr<std::unique_ptr<Udca>> { return std::unique_ptr<Udca>(new T); };
}

}  // namespace

std::string Udca::Apply(std::string_view, const pb::StoredEmail&) const { return ""; }

std::vector<NumericDate> FindNumericDates(std::string_view t) {
  std::vector<NumericDate> out;
  auto number = [&](size_t* i, int max_digits) {
    int v = 0, n = 0;
    while (*i < t.size() && IsDigit(t[*i]) && n < max_digits + 1) v = v * 10 + (t[(*i)++] - '0'), ++n;
    return n == 0 || n > max_digits ? -1 : v;
  };
  for (size_t i = 0; i < t.size(); ++i) {
    if (!IsDigit(t[i]) || (i > 0 && (IsDigit(t[i - 1]) || t[i - 1] == '/' || t[i - 1] == '.' || t[i - 1] == '-'))) continue;
    size_t j = i;
    const int a = number(&j, 2);
    if (a < 0 || j >= t.size() || (t[j] != '/' && t[j] != '.' && t[j] != '-')) continue;
    const char sep = t[j++];
    const int b = number(&j, 2);
    if (b < 0 || j >= t.size() || t[j] != sep) continue;
    ++j;
    const size_t year_start = j;
    int y = number(&j, 4);
    const size_t digits = j - year_start;
    if (y < 0 || (digits != 2 && digits != 4) || (j < t.size() && IsDigit(t[j]))) continue;
    if (digits == 2) y += 2000;
    out.push_back({a, b, y});
    i = j;
  }
  return out;
}

std::string ClassifyVertical(const pb::StoredEmail& email) {
  std::unordered_map<std::string, int> words;
  for (const auto& w : Tokenize(email.subject())) ++words[w];
  for (const auto& b : email.blocks()) {
    for (const auto& w : Tokenize(b.text())) ++words[w];
  }
  std::string best;
  int best_hits = 1;  // at least two distinct keywords
  for (const auto& v : Verticals()) {
    int hits = 0;
    for (const auto& k : v.words) hits += words.count(k) > 0 ? 1 : 0;
    if (hits > best_hits) best = v.label, best_hits = hits;
  }
  return best;
}

UdcaRegistry& UdcaRegistry::Global() {
  static UdcaRegistry* const r = [] {
    auto* reg = new UdcaRegistry;
    (void)reg->Register("fixed_text", Simple<FixedTextUdca>());
    (void)reg->Register("date_format", Simple<DateFormatUdca>());
    (void)reg->Register("field_extraction", Simple<FieldExtractionUdca>());
    (void)reg->Register("vertical", [](const pb::EmailConfig& c) -> StatusOr<std::unique_ptr<Udca>> {
      return std::unique_ptr<Udca>(new VerticalUdca(c.vertical_threshold()));
    });
    return reg;
  }();
  return *r;
}

Status UdcaRegistry::Register(const std::string& name, UdcaFactory factory) {
  if (name.empty()) return InvalidArgument("a cluster aggregator needs a name");
  std::lock_guard<std::mutex> lock(mu_);
  if (!factories_.emplace(name, std::move(factory)).second) {
    return FailedPrecondition("cluster aggregator \"" + name + "\" is registered already");
  }
  return Status::Ok();
}

std::vector<std::string> UdcaRegistry::Names() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> names;
  for (const auto& [n, f] : factories_) names.push_back(n);
  return names;
}

StatusOr<std::vector<std::unique_ptr<Udca>>> UdcaRegistry::Create(const pb::EmailConfig& config) const {
  std::vector<std::unique_ptr<Udca>> out;
  for (const std::string& name : config.udcas()) {
    UdcaFactory f;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = factories_.find(name);
      if (it == factories_.end()) {
        std::string known;
        for (const auto& [n, unused] : factories_) known += (known.empty() ? "" : ", ") + n;
        return NotFound("email.udcas: no cluster aggregator named \"" + name + "\" (registered: " + known + ")");
      }
      f = it->second;
    }
    ASSIGN_OR_RETURN(auto u, f(config));
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace neardup::email
