#include "partitioner/crawl_sample.h"

#include <xxhash.h>

#include <cmath>
#include <unordered_map>

namespace neardup::partitioner {

bool InSample(std::string_view url, double sample_rate) {
  if (sample_rate >= 1) return true;
  const uint64_t h = XXH3_64bits_withSeed(url.data(), url.size(), 0x53414d50);  // "SAMP"
  return static_cast<double>(h) < sample_rate * 18446744073709551616.0;
}

StatusOr<CrawlSample> SampleCrawl(const std::string& input, const CrawlSampleOptions& options) {
  if (!(options.sample_rate > 0 && options.sample_rate <= 1)) {
    return InvalidArgument("sample rate must be in (0, 1], got " + std::to_string(options.sample_rate));
  }
  struct Page {
    std::vector<uint32_t> words, shingles;
    bool alive = false;
  };
  std::unordered_map<std::string, size_t> index;
  std::vector<std::string> urls;
  std::vector<Page> pages;
  CrawlSignerOptions signer = options.signer;
  // Of the records read only the sampled ones are signed: in small rounds, signed while the
  // reader goes on (in one round the whole input is read before the first is signed).
  if (signer.round_records == 0) signer.round_records = 64;
  const double rate = options.sample_rate;
  // Most records are not in the sample: the reader passes over them after reading their URL.
  signer.reader.want_url = [rate](std::string_view url) { return InSample(url, rate); };
  signer.keep = [rate, also = options.signer.keep](const CrawlRecord& r) {
    return InSample(r.url, rate) && (!also || also(r));
  };
  CrawlSample out;
  if (options.max_pages > 0) {
    signer.done = [&] {
      out.whole_input = pages.size() < options.max_pages;
      return !out.whole_input;
    };
  }
  RETURN_IF_ERROR(SignCrawl(input, signer, [&](CrawlRecord& rec, PageFeatures& f) {
    auto [it, inserted] = index.try_emplace(rec.url, pages.size());
    if (inserted) {
      pages.emplace_back();
      urls.push_back(rec.url);
    }
    Page& p = pages[it->second];
    p.alive = rec.has_content();  // the last record of a URL wins: a redirect or gone record drops it
    p.words = std::move(f.length_vector);
    p.shingles = std::move(f.shingle_vector);
    if (it->second < options.keep_sets && rec.has_content()) {
      if (out.sets.size() <= it->second) out.sets.resize(it->second + 1);
      out.sets[it->second] = std::move(f.shingles);
    }
    return Status::Ok();
  }, &out.reader));
  out.sample = LengthSample(static_cast<uint32_t>(options.signer.signer.dims));
  for (size_t i = 0; i < pages.size(); ++i) {
    if (!pages[i].alive) continue;
    out.sample.Add(pages[i].words, pages[i].shingles);
    out.urls.push_back(std::move(urls[i]));
  }
  return out;
}

}  // namespace neardup::partitioner
