#include "document/crawl_signer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/json_write.h"
#include "testing/temp_dir.h"

namespace neardup {
namespace {

struct Signed {
  std::string url;
  std::vector<uint64_t> shingles;
  std::vector<uint32_t> length_vector;
  bool operator==(const Signed&) const = default;
};

// A crawl of `pages` text records of 2 to 60 KB (about 16 MB for 500: several rounds of 8 MB and
// a first round of 1 MB), words drawn from a small vocabulary so that pages share shingles.
std::vector<std::pair<std::string, std::string>> MakeCrawl(const std::string& path, int pages) {
  std::mt19937_64 rng(17);
  const std::vector<std::string> vocabulary = {"near", "duplicate", "Page", "crawl", "winner", "group",
                                               "shingle", "tier", "o'clock", "caf\xC3\xA9", "42", "x"};
  std::vector<std::pair<std::string, std::string>> records;
  std::ofstream out(path);
  for (int p = 0; p < pages; ++p) {
    std::string text;
    const size_t bytes = 2000 + rng() % 58000;
    while (text.size() < bytes) text += vocabulary[rng() % vocabulary.size()] + (rng() % 9 == 0 ? ". " : " ");
    std::string url = "http://example.com/page/" + std::to_string(p);
    std::string line = "{\"url\":";
    AppendJsonString(&line, url);
    line += ",\"text\":";
    AppendJsonString(&line, text);
    out << line << "}\n";
    records.emplace_back(std::move(url), std::move(text));
  }
  return records;
}

TEST(SignCrawl, DeliversEveryRecordInOrderSignedAsAlone) {
  test::TempDir dir;
  const std::string path = dir.File("crawl.jsonl");
  const auto records = MakeCrawl(path, 500);
  const Signer signer({});
  // keep: every third record skipped; round_records: 0 (up to 4,096 records or 8 MB) and 7.
  for (size_t round_records : {size_t{0}, size_t{7}}) {
    for (bool skip : {false, true}) {
      CrawlSignerOptions o;
      o.threads = 2;
      o.round_records = round_records;
      int seen = 0;
      if (skip) o.keep = [&seen](const CrawlRecord&) { return seen++ % 3 != 2; };
      std::vector<Signed> got;
      ASSERT_TRUE(SignCrawl(path, o, [&](CrawlRecord& r, PageFeatures& f) {
        got.push_back({r.url, f.shingles, f.length_vector});
        return Status::Ok();
      }).ok());
      std::vector<Signed> want;
      for (size_t k = 0; k < records.size(); ++k) {
        if (skip && k % 3 == 2) continue;
        PageFeatures f;
        signer.Sign(records[k].second, &f);
        want.push_back({records[k].first, f.shingles, f.length_vector});
      }
      ASSERT_EQ(got.size(), want.size()) << "round_records " << round_records << (skip ? ", skipping" : "");
      for (size_t k = 0; k < got.size(); ++k) {
        ASSERT_EQ(got[k], want[k]) << "record " << k << ", round_records " << round_records << (skip ? ", skipping" : "");
      }
    }
  }
}

}  // namespace
}  // namespace neardup
