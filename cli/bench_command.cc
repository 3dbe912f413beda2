// neardup bench: named workloads that print figures to compare as ratios.
//
//   neardup bench docmodel --input crawl.jsonl [--records N]
//     Single-threaded throughput of each document-model stage over the crawl's records, in one
//     process: JSON record parsing, HTML -> visible text, tokenizing, and full signing
//     (tokenize + shingles + length vectors + digest). MB/s are of the stage's input bytes.
//
//   neardup bench route --map map.pb --input crawl.jsonl [--records N]
//     Nanoseconds per page to find a page's home cell (the baseline) and to route it to every
//     shard that can hold a near-duplicate, single-threaded, on the crawl's own pages.
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>

#include "cli/commands.h"
#include "document/crawl_reader.h"
#include "document/html_text.h"
#include "document/signature.h"
#include "document/tokenizer.h"
#include "partitioner/crawl_sample.h"
#include "partitioner/partition_map.h"

namespace neardup::cli {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); }

int BenchDocModel(const std::string& input, uint64_t max_records, int repeat) {
  auto t0 = Clock::now();
  auto reader = CrawlReader::Open(input, {});
  if (!reader.ok()) { spdlog::error("{}", reader.status().message()); return 1; }
  std::vector<CrawlRecord> records;
  CrawlRecord r;
  while (records.size() < max_records && (*reader)->Next(&r)) records.push_back(r);
  const double parse_s = Seconds(t0);
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
  t0 = Clock::now();
  for (int rep = 0; rep < repeat; ++rep) {
    for (size_t i = 0; i < html_records.size(); ++i) {
      if (Status s = (*extractor)->Extract(html_records[i]->body, &html_texts[i]); !s.ok()) {
        spdlog::error("{}", s.message());
        return 1;
      }
    }
  }
  const double html_s = Seconds(t0) / repeat;
  for (auto& t : html_texts) texts.push_back(std::move(t));
  uint64_t text_bytes = 0;
  for (const auto& t : texts) text_bytes += t.size();

  // Tokenize only (the baseline the signing cost is compared with).
  std::vector<uint64_t> words;
  uint64_t word_count = 0;
  t0 = Clock::now();
  for (int rep = 0; rep < repeat; ++rep) {
    for (const auto& t : texts) { words.clear(); word_count += HashWords(t, &words); }
  }
  const double tok_s = Seconds(t0) / repeat;

  Signer signer({});
  PageFeatures f;
  uint64_t shingles = 0;
  t0 = Clock::now();
  for (int rep = 0; rep < repeat; ++rep) {
    for (const auto& t : texts) { signer.Sign(t, &f); shingles += f.shingles.size(); }
  }
  const double sign_s = Seconds(t0) / repeat;
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

// Routing cost per page against a map: Home() alone (the baseline) and full RouteShards().
int BenchRoute(const std::string& map_path, const std::string& input, uint64_t max_records, int repeat) {
  auto map = partitioner::PartitionMap::Load(map_path);
  if (!map.ok()) { spdlog::error("{}", map.status().message()); return 1; }
  partitioner::CrawlSampleOptions so;
  so.signer.signer = map->signer_options();
  so.signer.keep = [&, n = uint64_t{0}](const CrawlRecord&) mutable { return n++ < max_records; };
  auto sample = partitioner::SampleCrawl(input, so);
  if (!sample.ok()) { spdlog::error("{}", sample.status().message()); return 1; }
  const auto feature = map->proto().feature();
  const partitioner::LengthSample& s = sample->sample;
  uint64_t sink = 0;
  auto t0 = Clock::now();
  for (int rep = 0; rep < repeat; ++rep) {
    for (size_t i = 0; i < s.size(); ++i) sink += map->Home(s.Vector(i, feature));
  }
  const double home_s = Seconds(t0);
  std::vector<uint32_t> shards;
  uint64_t contacted = 0;
  t0 = Clock::now();
  for (int rep = 0; rep < repeat; ++rep) {
    for (size_t i = 0; i < s.size(); ++i) {
      map->RouteShards(s.Vector(i, feature), &shards);
      contacted += shards.size();
    }
  }
  const double route_s = Seconds(t0);
  const double pages = static_cast<double>(s.size()) * repeat;
  std::printf("bench route: %zu pages x %d, map of %u cells on %u shards (%s routing)\n", s.size(), repeat,
              map->cells(), map->shards(), map->proto().routing() == pb::PartitionMap::EXACT_L1 ? "exact" : "rho");
  std::printf("  home only       %8.1f ns/page\n", home_s / pages * 1e9);
  std::printf("  route shards    %8.1f ns/page  (%.2fx home), %.2f shards contacted per page  [%llu]\n",
              route_s / pages * 1e9, route_s / home_s, contacted / pages, (unsigned long long)(sink % 2));
  return 0;
}

}  // namespace

void RegisterBench(CLI::App& app, int* exit_code) {
  auto* bench = app.add_subcommand("bench", "Named benchmark workloads");
  bench->require_subcommand(1);
  auto* doc = bench->add_subcommand("docmodel", "Throughput of JSON parsing, HTML->text, tokenizing and signing");
  struct Args { std::string input; uint64_t records = 20000; int repeat = 3; };
  auto args = std::make_shared<Args>();
  doc->add_option("--input", args->input, "crawl JSON Lines")->required();
  doc->add_option("--records", args->records, "records to load")->capture_default_str();
  doc->add_option("--repeat", args->repeat, "repetitions of each stage")->capture_default_str()->check(CLI::PositiveNumber);
  doc->callback([args, exit_code] { *exit_code = BenchDocModel(args->input, args->records, args->repeat); });

  auto* route = bench->add_subcommand("route", "Routing cost per page (ns) against a partition map");
  struct RouteArgs { std::string map, input; uint64_t records = 100000; int repeat = 5; };
  auto ra = std::make_shared<RouteArgs>();
  route->add_option("--map", ra->map, "partition map")->required();
  route->add_option("--input", ra->input, "crawl JSON Lines")->required();
  route->add_option("--records", ra->records, "records to sign and route")->capture_default_str();
  route->add_option("--repeat", ra->repeat, "repetitions")->capture_default_str()->check(CLI::PositiveNumber);
  route->callback([ra, exit_code] { *exit_code = BenchRoute(ra->map, ra->input, ra->records, ra->repeat); });

  AddBenchTier2(bench, exit_code);
  AddBenchStatus(bench, exit_code);
  AddBenchStatusHttp(bench, exit_code);
  AddBenchEmail(bench, exit_code);
  AddBenchEmailThreads(bench, exit_code);
}

}  // namespace neardup::cli
