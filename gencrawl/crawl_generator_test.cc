#include "gencrawl/crawl_generator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/rfc3339.h"
#include "document/crawl_reader.h"
#include "document/html_text.h"
#include "document/shingle.h"
#include "document/tokenizer.h"

namespace neardup::gencrawl {
namespace {

struct Output {
  Status status;
  CrawlGenStats stats;
  std::string crawl, truth;
};

std::string ReadAll(std::FILE* f) {
  std::string s;
  std::rewind(f);
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}

Output Generate(const CrawlGenOptions& o, bool with_truth = true) {
  Output out;
  std::FILE* c = std::tmpfile();
  std::FILE* t = with_truth ? std::tmpfile() : nullptr;
  out.status = GenerateCrawl(o, c, t, &out.stats);
  out.crawl = ReadAll(c);
  std::fclose(c);
  if (t != nullptr) {
    out.truth = ReadAll(t);
    std::fclose(t);
  }
  return out;
}

std::vector<std::string_view> Lines(std::string_view s) {
  std::vector<std::string_view> lines;
  while (!s.empty()) {
    const size_t nl = s.find('\n');
    lines.push_back(s.substr(0, nl));
    s.remove_prefix(nl == std::string_view::npos ? s.size() : nl + 1);
  }
  return lines;
}

// One crawl record and its truth record, parsed.
struct Row {
  std::string url, body, redirect_to, fetched_at, market, kind;
  bool is_html = false, has_text = false, has_redirect = false, has_jaccard = false;
  double popularity = -1, jaccard = -1;
  int64_t family = -2, line = 0;
};

// A corpus shared by the tests below (generated once).
class CorpusTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    CrawlGenOptions o;
    o.pages = 6000;
    o.seed = 7;
    o.html_share = 0.5;
    o.shingle_k = 5;
    out_ = new Output(Generate(o));
    ASSERT_TRUE(out_->status.ok()) << out_->status.ToString();
    rows_ = new std::vector<Row>();
    const auto crawl = Lines(out_->crawl);
    const auto truth = Lines(out_->truth);
    ASSERT_EQ(crawl.size(), o.pages);
    ASSERT_EQ(truth.size(), o.pages);
    simdjson::dom::parser parser;
    for (size_t i = 0; i < crawl.size(); ++i) {
      Row r;
      simdjson::dom::object obj;
      const simdjson::padded_string pc(crawl[i]);
      ASSERT_EQ(parser.parse(pc).get(obj), simdjson::SUCCESS) << "crawl line " << i + 1;
      for (auto field : obj) {
        const std::string_view key = field.key;
        std::string_view sv;
        if (key == "url") { ASSERT_EQ(field.value.get(sv), simdjson::SUCCESS); r.url = sv; }
        else if (key == "html") { ASSERT_EQ(field.value.get(sv), simdjson::SUCCESS); r.body = sv; r.is_html = true; }
        else if (key == "text") { ASSERT_EQ(field.value.get(sv), simdjson::SUCCESS); r.body = sv; r.has_text = true; }
        else if (key == "redirect_to") { ASSERT_EQ(field.value.get(sv), simdjson::SUCCESS); r.redirect_to = sv; r.has_redirect = true; }
        else if (key == "fetched_at") { ASSERT_EQ(field.value.get(sv), simdjson::SUCCESS); r.fetched_at = sv; }
        else if (key == "market") { ASSERT_EQ(field.value.get(sv), simdjson::SUCCESS); r.market = sv; }
        else if (key == "popularity") { ASSERT_EQ(field.value.get(r.popularity), simdjson::SUCCESS); }
        else FAIL() << "unexpected field " << key << " on crawl line " << i + 1;
      }
      simdjson::dom::object tobj;
      const simdjson::padded_string pt(truth[i]);
      ASSERT_EQ(parser.parse(pt).get(tobj), simdjson::SUCCESS) << "truth line " << i + 1;
      std::string_view sv;
      ASSERT_EQ(tobj["url"].get(sv), simdjson::SUCCESS);
      EXPECT_EQ(sv, r.url) << "truth line " << i + 1;
      ASSERT_EQ(tobj["line"].get(r.line), simdjson::SUCCESS);
      ASSERT_EQ(tobj["family"].get(r.family), simdjson::SUCCESS);
      ASSERT_EQ(tobj["kind"].get(sv), simdjson::SUCCESS);
      r.kind = sv;
      double j;
      if (tobj["jaccard_to_source"].get(j) == simdjson::SUCCESS) {
        r.has_jaccard = true;
        r.jaccard = j;
      }
      rows_->push_back(std::move(r));
    }
  }
  static void TearDownTestSuite() {
    delete out_;
    delete rows_;
  }

  // Words of a content record's visible text, with the project's extractor for html.
  static std::vector<uint64_t> VisibleWords(const Row& r) {
    static std::unique_ptr<HtmlToText> extractor = std::move(HtmlToText::Create().value());
    std::string text;
    if (r.is_html) {
      EXPECT_TRUE(extractor->Extract(r.body, &text).ok());
    } else {
      text = r.body;
    }
    std::vector<uint64_t> words;
    HashWords(text, &words);
    return words;
  }
  static bool IsContent(const Row& r) { return r.is_html || r.has_text; }
  static bool IsRecrawl(const Row& r) { return r.kind.rfind("recrawl_", 0) == 0; }

  static Output* out_;
  static std::vector<Row>* rows_;
};
Output* CorpusTest::out_ = nullptr;
std::vector<Row>* CorpusTest::rows_ = nullptr;

TEST(CrawlGeneratorTest, SameSeedSameBytesOtherSeedOtherBytes) {
  CrawlGenOptions o;
  o.pages = 1500;
  o.seed = 42;
  const Output a = Generate(o), b = Generate(o);
  ASSERT_TRUE(a.status.ok());
  EXPECT_EQ(a.crawl, b.crawl);
  EXPECT_EQ(a.truth, b.truth);
  o.seed = 43;
  const Output c = Generate(o);
  ASSERT_TRUE(c.status.ok());
  EXPECT_NE(a.crawl, c.crawl);
  EXPECT_NE(a.truth, c.truth);
}

TEST(CrawlGeneratorTest, TruthFileDoesNotChangeTheCrawl) {
  CrawlGenOptions o;
  o.pages = 800;
  const Output with = Generate(o, true), without = Generate(o, false);
  ASSERT_TRUE(without.status.ok());
  EXPECT_EQ(with.crawl, without.crawl);
}

TEST(CrawlGeneratorTest, StatsMatchTheOutput) {
  CrawlGenOptions o;
  o.pages = 1200;
  const Output out = Generate(o);
  ASSERT_TRUE(out.status.ok());
  EXPECT_EQ(out.stats.records, 1200u);
  EXPECT_EQ(out.stats.content_records + out.stats.redirect_records, out.stats.records);
  EXPECT_EQ(out.stats.bytes, out.crawl.size());
  EXPECT_GT(out.stats.families, 0u);
  EXPECT_GT(out.stats.recrawl_records, 0u);
}

TEST(CrawlGeneratorTest, TinyCorporaHaveExactlyThePagesAsked) {
  for (uint64_t pages : {1, 2, 5, 19, 20, 37}) {
    CrawlGenOptions o;
    o.pages = pages;
    const Output out = Generate(o);
    ASSERT_TRUE(out.status.ok()) << pages;
    EXPECT_EQ(Lines(out.crawl).size(), pages);
    EXPECT_EQ(Lines(out.truth).size(), pages);
    EXPECT_EQ(out.stats.records, pages);
  }
}

TEST(CrawlGeneratorTest, HtmlShareExtremes) {
  CrawlGenOptions o;
  o.pages = 300;
  o.html_share = 0.0;
  Output out = Generate(o);
  ASSERT_TRUE(out.status.ok());
  EXPECT_EQ(out.crawl.find("\"html\":"), std::string::npos);
  o.html_share = 1.0;
  out = Generate(o);
  ASSERT_TRUE(out.status.ok());
  EXPECT_EQ(out.crawl.find("\"text\":"), std::string::npos);
}

TEST(CrawlGeneratorTest, BadOptionsAreRefused) {
  std::FILE* f = std::tmpfile();
  auto code = [&](CrawlGenOptions o, std::FILE* crawl) { return GenerateCrawl(o, crawl, nullptr, nullptr).code(); };
  CrawlGenOptions ok;
  ok.pages = 5;
  EXPECT_EQ(code(ok, f), StatusCode::kOk);
  EXPECT_EQ(code(ok, nullptr), StatusCode::kInvalidArgument);
  CrawlGenOptions o = ok;
  o.pages = 0;
  EXPECT_EQ(code(o, f), StatusCode::kInvalidArgument);
  o = ok;
  o.pages = 200000000;
  EXPECT_EQ(code(o, f), StatusCode::kInvalidArgument);
  for (double share : {-0.01, 1.01, std::nan("")}) {
    o = ok;
    o.html_share = share;
    EXPECT_EQ(code(o, f), StatusCode::kInvalidArgument) << share;
  }
  for (int k : {0, -1, 17}) {
    o = ok;
    o.shingle_k = k;
    EXPECT_EQ(code(o, f), StatusCode::kInvalidArgument) << k;
  }
  for (int k : {1, 16}) {
    o = ok;
    o.shingle_k = k;
    EXPECT_EQ(code(o, f), StatusCode::kOk) << k;
  }
  for (double drift : {-0.01, 0.3, std::nan("")}) {
    o = ok;
    o.length_drift = drift;
    EXPECT_EQ(code(o, f), StatusCode::kInvalidArgument) << drift;
  }
  o = ok;
  o.epoch = 101;
  EXPECT_EQ(code(o, f), StatusCode::kInvalidArgument);
  std::fclose(f);
}

// Word counts of the text records of a text-only crawl.
std::vector<size_t> TextLengths(const Output& out) {
  std::vector<size_t> lengths;
  simdjson::dom::parser parser;
  std::vector<uint64_t> words;
  for (std::string_view line : Lines(out.crawl)) {
    const simdjson::padded_string p(line);
    simdjson::dom::element e;
    std::string_view text;
    if (parser.parse(p).get(e) != simdjson::SUCCESS || e["text"].get(text) != simdjson::SUCCESS) continue;
    lengths.push_back(HashWords(text, &words));
  }
  return lengths;
}

TEST(CrawlGeneratorTest, EpochZeroOrNoDriftIsTheUndriftedCrawl) {
  CrawlGenOptions o;
  o.pages = 1200;
  o.seed = 9;
  const Output base = Generate(o);
  CrawlGenOptions e0 = o;
  e0.length_drift = 0.05;  // epoch 0
  CrawlGenOptions d0 = o;
  d0.epoch = 7;  // no drift
  EXPECT_EQ(Generate(e0).crawl, base.crawl);
  EXPECT_EQ(Generate(d0).crawl, base.crawl);
  CrawlGenOptions drifted = o;
  drifted.epoch = 3;
  drifted.length_drift = 0.05;
  const Output a = Generate(drifted), b = Generate(drifted);
  EXPECT_EQ(a.crawl, b.crawl);  // still deterministic
  EXPECT_NE(a.crawl, base.crawl);
}

TEST(CrawlGeneratorTest, LengthDriftMovesWeightBetweenSpikesAndStretchesTheBody) {
  CrawlGenOptions o;
  o.pages = 8000;
  o.seed = 5;
  o.html_share = 0;
  CrawlGenOptions later = o;
  later.epoch = 10;
  later.length_drift = 0.05;  // spikes x exp(+-0.5), body median x exp(0.25)
  const auto before = TextLengths(Generate(o)), after = TextLengths(Generate(later));
  ASSERT_GT(before.size(), 5000u);
  ASSERT_GT(after.size(), 5000u);
  // Share of pages near a spike (the generator's jitter, plus a few words of tokenizer slack).
  auto share = [](const std::vector<size_t>& v, size_t spike) {
    const size_t slack = spike / 80 + 3;
    return static_cast<double>(std::count_if(v.begin(), v.end(), [&](size_t n) {
             return n + slack >= spike && n <= spike + slack;
           })) / static_cast<double>(v.size());
  };
  EXPECT_GT(share(after, 237), 1.3 * share(before, 237));  // a growing spike
  EXPECT_LT(share(after, 142), 0.8 * share(before, 142));  // a shrinking one
  auto median = [](std::vector<size_t> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  EXPECT_NE(median(after), median(before));
}

TEST(CrawlGeneratorTest, WriteFailureIsIoError) {
  std::FILE* full = std::fopen("/dev/full", "w");
  if (full == nullptr) GTEST_SKIP() << "no /dev/full";
  CrawlGenOptions o;
  o.pages = 50;
  EXPECT_EQ(GenerateCrawl(o, full, nullptr, nullptr).code(), StatusCode::kIoError);
  std::fclose(full);
  std::FILE* crawl = std::tmpfile();
  full = std::fopen("/dev/full", "w");
  EXPECT_EQ(GenerateCrawl(o, crawl, full, nullptr).code(), StatusCode::kIoError);
  std::fclose(full);
  std::fclose(crawl);
}

TEST_F(CorpusTest, EveryRecordHasTheRequiredFields) {
  static const std::map<std::string, std::string> kTld = {
      {"us", ".com"}, {"uk", ".co.uk"}, {"de", ".de"}, {"fr", ".fr"}};
  for (const Row& r : *rows_) {
    SCOPED_TRACE(r.line);
    EXPECT_TRUE(IsAbsoluteHttpUrl(r.url)) << r.url;
    EXPECT_EQ(static_cast<int>(r.is_html) + static_cast<int>(r.has_text) + static_cast<int>(r.has_redirect), 1);
    if (r.has_redirect) {
      EXPECT_TRUE(IsAbsoluteHttpUrl(r.redirect_to)) << r.redirect_to;
    }
    EXPECT_GE(r.popularity, 0.0);
    EXPECT_TRUE(ParseRfc3339(r.fetched_at).has_value()) << r.fetched_at;
    EXPECT_THAT(r.fetched_at, ::testing::MatchesRegex("2024-06-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]Z"));
    ASSERT_TRUE(kTld.count(r.market)) << r.market;
    const size_t scheme_end = r.url.find("://") + 3;
    const std::string host = r.url.substr(scheme_end, r.url.find('/', scheme_end) - scheme_end);
    EXPECT_TRUE(host.ends_with(kTld.at(r.market))) << host << " " << r.market;
  }
}

TEST_F(CorpusTest, TheProjectReaderAcceptsEveryLine) {
  CrawlRecord rec;
  for (std::string_view line : Lines(out_->crawl)) {
    const Status st = ParseCrawlRecord(line, &rec);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
}

TEST_F(CorpusTest, TruthMatchesTheCrawl) {
  static const std::set<std::string> kKinds = {
      "original", "unique", "exact_copy", "mirror", "boilerplate", "edit", "redirect", "redirect_chain",
      "redirect_cycle", "recrawl_unchanged", "recrawl_small_edit", "recrawl_rewrite", "recrawl_to_redirect"};
  std::map<std::string, int> count;
  for (size_t i = 0; i < rows_->size(); ++i) {
    const Row& r = (*rows_)[i];
    SCOPED_TRACE(r.line);
    EXPECT_EQ(r.line, static_cast<int64_t>(i + 1));
    ASSERT_TRUE(kKinds.count(r.kind)) << r.kind;
    ++count[r.kind];
    EXPECT_GE(r.family, -1);
    const bool redirect_kind = r.kind.find("redirect") != std::string::npos;
    EXPECT_EQ(r.has_redirect, redirect_kind);
    const bool expects_jaccard = !redirect_kind && r.kind != "original" && r.kind != "unique";
    EXPECT_EQ(r.has_jaccard, expects_jaccard);
    if (r.has_jaccard) {
      EXPECT_GE(r.jaccard, 0.0);
      EXPECT_LE(r.jaccard, 1.0);
    }
    if (r.kind == "unique" || r.kind == "redirect_cycle" || r.kind == "recrawl_rewrite") {
      EXPECT_EQ(r.family, -1);
    }
    if (r.kind == "original" || r.kind == "exact_copy" || r.kind == "mirror" || r.kind == "boilerplate" ||
        r.kind == "edit") {
      EXPECT_GE(r.family, 0);
    }
    if (r.kind == "exact_copy" || r.kind == "mirror" || r.kind == "recrawl_unchanged") {
      EXPECT_EQ(r.jaccard, 1.0);
    }
  }
  for (const std::string& k : kKinds) EXPECT_GT(count[k], 0) << k;
}

TEST_F(CorpusTest, FetchedAtIsNonDecreasingOverTwoWeeks) {
  int64_t prev = 0;
  for (const Row& r : *rows_) {
    const int64_t t = *ParseRfc3339(r.fetched_at);
    EXPECT_GE(t, prev) << "line " << r.line;
    prev = t;
  }
  const int64_t first = *ParseRfc3339(rows_->front().fetched_at);
  const int64_t span_days = (prev - first) / 86400000;
  EXPECT_GE(span_days, 13);
  EXPECT_LE(span_days, 14);
}

TEST_F(CorpusTest, UrlsAreUniqueExceptRecrawls) {
  std::map<std::string, const Row*> first_fetch;
  for (const Row& r : *rows_) {
    if (IsRecrawl(r)) continue;
    EXPECT_TRUE(first_fetch.emplace(r.url, &r).second) << "duplicate URL " << r.url;
  }
  int recrawls = 0;
  for (const Row& r : *rows_) {
    if (!IsRecrawl(r)) continue;
    ++recrawls;
    auto it = first_fetch.find(r.url);
    ASSERT_NE(it, first_fetch.end()) << r.url;
    const Row& orig = *it->second;
    EXPECT_LT(orig.line, r.line);
    EXPECT_TRUE(IsContent(orig)) << "line " << orig.line;
    EXPECT_GT(*ParseRfc3339(r.fetched_at), *ParseRfc3339(orig.fetched_at));
    if (r.kind == "recrawl_to_redirect") {
      EXPECT_TRUE(r.has_redirect);
    } else {
      EXPECT_TRUE(IsContent(r));
    }
  }
  const double share = static_cast<double>(recrawls) / static_cast<double>(rows_->size());
  EXPECT_GE(share, 0.10);
  EXPECT_LE(share, 0.15);
}

TEST_F(CorpusTest, PageLengthsAreBoundedAndSpiky) {
  std::map<int, int> buckets;  // 10-word buckets
  int pages = 0;
  for (const Row& r : *rows_) {
    if (r.kind != "unique" && r.kind != "original") continue;
    const size_t n = VisibleWords(r).size();
    ASSERT_GE(n, 20u) << "line " << r.line;
    ASSERT_LE(n, 1700u) << "line " << r.line;
    ++buckets[static_cast<int>(n / 10)];
    ++pages;
  }
  std::vector<int> counts;
  int top_bucket = 0, top = 0;
  for (const auto& [b, c] : buckets) {
    counts.push_back(c);
    if (c > top) { top = c; top_bucket = b; }
  }
  std::sort(counts.begin(), counts.end());
  const int median = counts[counts.size() / 2];
  EXPECT_EQ(top_bucket, 23) << "the biggest spike is near 237 words";
  EXPECT_GE(top, 10 * median) << "top " << top << " median " << median;
  EXPECT_GT(static_cast<double>(top) / pages, 0.08);
  // A long right tail.
  int long_pages = 0;
  for (const auto& [b, c] : buckets) long_pages += b >= 100 ? c : 0;
  EXPECT_GT(long_pages, pages / 50);
}

TEST_F(CorpusTest, EnoughPagesHaveNearDuplicates) {
  std::map<int64_t, int> family_size;
  int first_fetch_content = 0;
  for (const Row& r : *rows_) {
    if (!IsContent(r) || IsRecrawl(r)) continue;
    ++first_fetch_content;
    if (r.family >= 0) ++family_size[r.family];
  }
  int in_families = 0;
  for (const auto& [f, n] : family_size) {
    EXPECT_GE(n, 2) << "family " << f;
    in_families += n;
  }
  const double share = static_cast<double>(in_families) / first_fetch_content;
  EXPECT_GE(share, 0.28);
  EXPECT_LE(share, 0.45);
}

// The html of a page and the text of the same content give the same words once the project's
// extractor drops what is not visible.
TEST_F(CorpusTest, HtmlAndTextOfTheSameContentHaveTheSameWords) {
  std::map<int64_t, const Row*> originals;
  for (const Row& r : *rows_) {
    if (r.kind == "original") originals[r.family] = &r;
  }
  int compared = 0;
  for (const Row& r : *rows_) {
    if (r.kind != "exact_copy" && r.kind != "mirror") continue;
    const Row& o = *originals.at(r.family);
    if (o.is_html == r.is_html) continue;
    EXPECT_EQ(VisibleWords(o), VisibleWords(r)) << "lines " << o.line << " and " << r.line;
    ++compared;
  }
  EXPECT_GE(compared, 20);
}

TEST_F(CorpusTest, ScriptAndStyleWordsAreNotVisible) {
  int checked = 0;
  for (const Row& r : *rows_) {
    if (!r.is_html) continue;
    std::vector<uint64_t> naive;
    HashWords(r.body, &naive);  // every word in the markup, scripts included
    EXPECT_GT(naive.size(), VisibleWords(r).size() + 30);
    EXPECT_NE(r.body.find("<script"), std::string::npos);
    EXPECT_NE(r.body.find("<style>"), std::string::npos);
    if (++checked == 50) break;
  }
}

// jaccard_to_source is what the real code measures between the record and its source (the
// family's original, which may be fetched before or after its copies; or, for a recrawl, the
// previous fetch of the URL).
TEST_F(CorpusTest, JaccardToSourceIsTheMeasuredValue) {
  std::map<int64_t, const Row*> originals;
  for (const Row& r : *rows_) {
    if (r.kind == "original") originals[r.family] = &r;
  }
  std::map<std::string, const Row*> previous;  // previous content fetch of each URL
  int checked = 0;
  for (const Row& r : *rows_) {
    if (r.has_jaccard && r.kind != "exact_copy" && r.kind != "mirror" && r.kind != "recrawl_unchanged") {
      const Row* src = IsRecrawl(r) ? previous.at(r.url) : originals.at(r.family);
      const double j = Jaccard(ShingleSet(VisibleWords(r), 5), ShingleSet(VisibleWords(*src), 5));
      EXPECT_NEAR(j, r.jaccard, 1e-5) << "line " << r.line << " kind " << r.kind;
      ++checked;
    }
    if (IsContent(r) && !previous.count(r.url)) previous[r.url] = &r;
  }
  EXPECT_GE(checked, 200);
}

TEST_F(CorpusTest, EditsLandNearTheirTargets) {
  const double thresholds[] = {0.5, 0.8, 0.9, 0.95};
  int edits = 0, near_target = 0, just_below_09 = 0, just_above_09 = 0;
  for (const Row& r : *rows_) {
    if (r.kind != "edit") continue;
    ++edits;
    double best = 1;
    for (double t : thresholds) best = std::min(best, std::fabs(r.jaccard - t));
    if (best <= 0.04) ++near_target;
    if (r.jaccard >= 0.86 && r.jaccard < 0.9) ++just_below_09;
    if (r.jaccard >= 0.9 && r.jaccard <= 0.94) ++just_above_09;
  }
  ASSERT_GT(edits, 100);
  EXPECT_GE(near_target, edits * 9 / 10) << near_target << " of " << edits;
  EXPECT_GT(just_below_09, 10);
  EXPECT_GT(just_above_09, 10);
}

TEST_F(CorpusTest, RedirectsChainsAndCycles) {
  std::map<std::string, const Row*> by_url;
  for (const Row& r : *rows_) {
    if (!IsRecrawl(r)) by_url[r.url] = &r;
  }
  int two_cycles = 0, three_cycles = 0, chains = 0;
  for (const Row& r : *rows_) {
    if (!r.has_redirect) continue;
    ASSERT_TRUE(by_url.count(r.redirect_to)) << "line " << r.line << " redirects to an unknown " << r.redirect_to;
    if (r.kind == "redirect") {
      EXPECT_TRUE(IsContent(*by_url.at(r.redirect_to))) << "line " << r.line;
    }
    if (r.kind == "redirect_cycle") {
      // Follow the cycle back to the start, as a reader must survive it.
      std::string u = r.redirect_to;
      int hops = 1;
      while (u != r.url && hops < 10) {
        const Row& next = *by_url.at(u);
        ASSERT_TRUE(next.has_redirect);
        EXPECT_EQ(next.kind, "redirect_cycle");
        u = next.redirect_to;
        ++hops;
      }
      EXPECT_EQ(u, r.url);
      two_cycles += hops == 2;
      three_cycles += hops == 3;
    }
    if (r.kind == "redirect_chain") {
      std::string u = r.redirect_to;
      int hops = 1;
      while (by_url.at(u)->has_redirect && hops < 10) {
        u = by_url.at(u)->redirect_to;
        ++hops;
      }
      EXPECT_LE(hops, 4);
      EXPECT_TRUE(IsContent(*by_url.at(u)));
      EXPECT_EQ(by_url.at(u)->family, r.family);
      ++chains;
    }
  }
  EXPECT_GT(two_cycles, 0);
  EXPECT_GT(three_cycles, 0);
  EXPECT_GT(chains, 10);
}

TEST_F(CorpusTest, PopularityIsHeavyTailed) {
  std::vector<double> p;
  for (const Row& r : *rows_) p.push_back(r.popularity);
  std::sort(p.begin(), p.end());
  const double median = p[p.size() / 2], p999 = p[p.size() * 999 / 1000];
  EXPECT_GT(p999, 50 * median);
  EXPECT_EQ(p.front(), 0.0);
}

TEST_F(CorpusTest, UrlsMixStaticAndDynamic) {
  int dynamic = 0, session = 0;
  for (const Row& r : *rows_) {
    dynamic += r.url.find('?') != std::string::npos;
    session += r.url.find("sessionid=") != std::string::npos || r.url.find("sid=") != std::string::npos;
  }
  EXPECT_GT(dynamic, static_cast<int>(rows_->size()) / 5);
  EXPECT_LT(dynamic, static_cast<int>(rows_->size()) * 4 / 5);
  EXPECT_GT(session, 50);
}

// Run by hand: ./crawl_generator_test --gtest_also_run_disabled_tests --gtest_filter='*Million*'
TEST(CrawlGeneratorTest, DISABLED_MillionPages) {
  CrawlGenOptions o;
  o.pages = 1000000;
  std::FILE* crawl = std::tmpfile();
  std::FILE* truth = std::tmpfile();
  CrawlGenStats s;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(GenerateCrawl(o, crawl, truth, &s).ok());
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("1M pages: %.1f s, %llu bytes, %llu content, %llu redirect, %llu recrawl, %llu families\n", sec,
              static_cast<unsigned long long>(s.bytes), static_cast<unsigned long long>(s.content_records),
              static_cast<unsigned long long>(s.redirect_records), static_cast<unsigned long long>(s.recrawl_records),
              static_cast<unsigned long long>(s.families));
  std::fclose(crawl);
  std::fclose(truth);
}

}  // namespace
}  // namespace neardup::gencrawl
