#include "bench/docmodel_bench.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>

#include "document/crawl_reader.h"
#include "document/html_text.h"
#include "document/signature.h"
#include "document/tokenizer.h"

namespace neardup::bench {
namespace {

using DocModelClock = std::chrono::steady_clock;

double SecondsSince(DocModelClock::time_point a) { return std::chrono::duration<double>(DocModelClock::now() - a).count(); }

}  // namespace

int RunDocModelBench(const std::string& input, uint64_t max_records, int repeat) {
  auto t0 = DocModelClock::now();
  auto reader = CrawlReader::Open(input, {});
  if (!reader.ok()) { spdlog::error("{}", reader.status().message()); return 1; }
  std::vector<CrawlRecord> records;
  CrawlRecord r;
  while (records.size() < max_records && (*reader)->Next(&r)) records.push_back(r);
  const double parse_s = SecondsSince(t0);
  const uint64_t parse_bytes = (*reader)->stats().bytes;
  auto extractor = HtmlToText::Create();
  if (!extractor.ok()) { spdlog::error("{}", extractor.status().message()); return 1; }

  // HTML -> text over html records only; text records are copied outside the timed loop.
  uint64_t html_bytes = 0, html_docs = 0;
  std::vector<std::string> texts;
  std::vector<const CrawlRecord*> html_records;
  for (const auto& rec : records) {
    if (!rec.has_content()) continue;
    if (rec.is_html) { html_records.push_back(&rec); html_bytes += rec.body.size(); ++html_docs; }
    else texts.push_back(rec.body);
  }
  std::vector<std::string> html_texts(html_records.size());
  t0 = DocModelClock::now();
  for (int rep = 0; rep < repeat; ++rep) {
    for (size_t i = 0; i < html_records.size(); ++i) {
      if (Status s = (*extractor)->Extract(html_records[i]->body, &html_texts[i]); !s.ok()) {
        spdlog::error("{}", s.message());
        return 1;
      }
    }
  }
  const double html_s = SecondsSince(t0) / repeat;
  for (auto& t : html_texts) texts.push_back(std::move(t));
  uint64_t text_bytes = 0;
  for (const auto& t : texts) text_bytes += t.size();

  // Tokenize only (the baseline the signing cost is compared with).
  std::vector<uint64_t> words;
  uint64_t word_count = 0;
  t0 = DocModelClock::now();
  for (int rep = 0; rep < repeat; ++rep) {
    for (const auto& t : texts) { words.clear(); word_count += HashWords(t, &words); }
  }
  const double tok_s = SecondsSince(t0) / repeat;

  Signer signer({});
  PageFeatures f;
  uint64_t shingles = 0;
  t0 = DocModelClock::now();
  for (int rep = 0; rep < repeat; ++rep) {
    for (const auto& t : texts) { signer.Sign(t, &f); shingles += f.shingles.size(); }
  }
  const double sign_s = SecondsSince(t0) / repeat;
  const double mb = 1e6;
  std::printf("bench docmodel: %zu records (%llu html, %.1f MB html, %.1f MB visible text), %d repetitions\n",
              records.size(), (unsigned long long)html_docs, html_bytes / mb, text_bytes / mb, repeat);
  std::printf("  json parse      %8.1f MB/s  (%.1f MB in %.3fs)\n", parse_bytes / mb / parse_s, parse_bytes / mb, parse_s);
  if (html_docs > 0) {
    std::printf("  html -> text    %8.1f MB/s of html\n", html_bytes / mb / html_s);
  }
  std::printf("  tokenize        %8.1f MB/s of text, %.1f M words/s\n", text_bytes / mb / tok_s,
              word_count / repeat / 1e6 / tok_s);
  std::printf("  sign (k=5,N=3)  %8.1f MB/s of text, %.0f pages/s  (%.2fx tokenize time)\n", text_bytes / mb / sign_s,
              texts.size() / sign_s, sign_s / tok_s);
  return 0;
}

}  // namespace neardup::bench
