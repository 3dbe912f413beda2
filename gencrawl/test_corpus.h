// Test support for gencrawl's tests (header-only, tests only): Generate() runs GenerateCrawl into
// strings, and CorpusTest is a GoogleTest fixture holding one generated crawl with its truth file,
// parsed record by record. Each test file derives its own suite from CorpusTest:
//
//   class FamiliesTest : public CorpusTest {};
//   TEST_F(FamiliesTest, X) { for (const Row& r : *rows_) ... }
#pragma once

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "document/html_text.h"
#include "document/tokenizer.h"
#include "gencrawl/crawl_generator.h"

namespace neardup::gencrawl {

struct Output {
  Status status;
  CrawlGenStats stats;
  std::string crawl, truth;
};

inline std::string ReadAll(std::FILE* f) {
  std::string s;
  std::rewind(f);
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}

// The crawl (and truth file, when asked) GenerateCrawl writes for `o`.
inline Output Generate(const CrawlGenOptions& o, bool with_truth = true) {
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

inline std::vector<std::string_view> Lines(std::string_view s) {
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

// A corpus shared by the tests of a suite (generated once).
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
    out_ = nullptr;
    rows_ = nullptr;
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

  inline static Output* out_ = nullptr;
  inline static std::vector<Row>* rows_ = nullptr;
};

}  // namespace neardup::gencrawl
