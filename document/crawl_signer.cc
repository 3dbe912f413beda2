#include "document/crawl_signer.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "common/progress.h"
#include "common/worker_pool.h"
#include "document/html_text.h"

namespace neardup {
namespace {

constexpr size_t kRound = 4096;  // records signed in parallel per round, at most
// Bodies a round holds, at most: raw HTML pages are tens of KB each, and a round of 4096 of them
// would be read (decompressed, for a .warc.gz) before any is signed and held twice over. The
// first round holds an eighth of it: it is read while no worker has anything to sign.
constexpr size_t kRoundBytes = 8 << 20;
constexpr size_t kChunk = 16;    // records a worker claims at a time

}  // namespace

int ResolveThreads(int requested) {
  if (requested > 0) return requested;
  const unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : static_cast<int>(hc);
}

Status SignRecord(const CrawlRecord& record, const Signer& signer, HtmlToText* extractor, std::string* text,
                  PageFeatures* out) {
  std::string_view body = record.has_content() ? std::string_view(record.body) : std::string_view();
  if (record.is_html && record.has_content()) {
    RETURN_IF_ERROR(extractor->Extract(record.body, text));
    body = *text;
  }
  signer.Sign(body, out);
  return Status::Ok();
}

Status SignCrawl(const std::string& input, const CrawlSignerOptions& options, const SignedRecordSink& sink,
                 CrawlReaderStats* stats) {
  RETURN_IF_ERROR(ValidateSignerOptions(options.signer));
  ASSIGN_OR_RETURN(auto reader, CrawlReader::Open(input, options.reader));
  const int threads = ResolveThreads(options.threads);
  // Worker 0 is the calling thread; the others are made here, so they inherit its priority.
  WorkerPool pool(threads, "nd-sign");
  std::vector<std::unique_ptr<HtmlToText>> extractors;
  for (int w = 0; w < threads; ++w) {
    ASSIGN_OR_RETURN(auto e, HtmlToText::Create());
    extractors.push_back(std::move(e));
  }
  const Signer signer(options.signer);
  Progress progress(options.progress_label, reader->total_bytes());

  std::vector<CrawlRecord> rounds[2] = {std::vector<CrawlRecord>(kRound), std::vector<CrawlRecord>(kRound)};
  std::vector<PageFeatures> features(kRound);
  std::vector<Status> errors(threads);
  const size_t round_cap = options.round_records > 0 ? std::min(options.round_records, kRound) : kRound;
  auto read_round = [&](std::vector<CrawlRecord>& buf, size_t cap_bytes = kRoundBytes) {
    size_t got = 0, bytes = 0;
    while (got < round_cap && bytes < cap_bytes && reader->Next(&buf[got])) {
      if (!options.keep || options.keep(buf[got])) bytes += buf[got++].body.size();
    }
    return got;
  };
  int cur = 0;
  size_t got = read_round(rounds[cur], kRoundBytes / 8);
  Status result;
  while (result.ok()) {
    if (got == 0) {
      if (!options.idle || !reader->paused() || !reader->status().ok()) break;
      StatusOr<bool> more = options.idle();
      if (!more.ok()) {
        result = more.status();
        break;
      }
      if (!*more) break;
      got = read_round(rounds[cur]);
      continue;
    }
    std::vector<CrawlRecord>& round = rounds[cur];
    std::atomic<size_t> next{0};
    auto work = [&](int w) {
      std::string text;
      for (size_t i; (i = next.fetch_add(kChunk)) < got;) {
        for (size_t k = i; k < std::min(got, i + kChunk); ++k) {
          if (Status s = SignRecord(round[k], signer, extractors[w].get(), &text, &features[k]); !s.ok()) errors[w] = s;
        }
      }
    };
    size_t next_got = 0;
    pool.Run([&](int w) {
      if (w == 0) next_got = read_round(rounds[1 - cur]);  // overlaps with the other workers
      work(w);
    });
    for (const Status& s : errors) {
      if (!s.ok() && result.ok()) result = s;
    }
    for (size_t k = 0; k < got && result.ok(); ++k) result = sink(round[k], features[k]);
    if (!options.progress_label.empty()) progress.Update(reader->stats().records, reader->stats().bytes);
    if (result.ok() && options.done && options.done()) break;
    cur = 1 - cur;
    got = next_got;
  }
  if (result.ok()) result = reader->status();
  if (!options.progress_label.empty()) progress.Finish(reader->stats().records);
  if (stats != nullptr) *stats = reader->stats();
  return result;
}

}  // namespace neardup
