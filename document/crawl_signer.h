// SignCrawl: read a crawl and sign its pages on all cores, delivering results in input order.
//
// The one read→extract→sign pipeline that the baseline, the partitioner and the tiers share.
// While worker threads sign one round of records, the calling thread reads the next; the sink is
// called on the calling thread, once per good record, in input order, so "the last record of a
// URL wins" is easy to implement on top.
//
//   Status s = SignCrawl("crawl.jsonl", options, [&](CrawlRecord& r, PageFeatures& f) {
//     pages[r.url] = std::move(f.shingles);
//     return Status::Ok();
//   }, &stats);
//
// Errors: IoError if the input cannot be opened or read; InvalidArgument for bad signer options;
// Internal if the HTML parser fails; the first non-OK status returned by the sink (reading stops).
// Bad lines are not errors: they are reported, counted in *stats and skipped.
#pragma once

#include <functional>
#include <string>

#include "common/status.h"
#include "document/crawl_reader.h"
#include "document/signature.h"

namespace neardup {

struct CrawlSignerOptions {
  SignerOptions signer;
  CrawlReaderOptions reader;
  int threads = 0;                  // 0 = one per core
  // Records a round holds at most (0: 4096). While the workers sign a round, the calling thread
  // reads the next: a reader that keeps few of the records it reads (a sample) overlaps its
  // reading with their signing only in rounds of a few.
  size_t round_records = 0;
  std::string progress_label;       // non-empty: log progress lines under this name
  // Optional: records for which this returns false are skipped before signing (e.g. sampling).
  std::function<bool(const CrawlRecord&)> keep;
  // Following a growing input (reader.readable set): called on the calling thread, between
  // rounds, when the reader has nothing more readable (every record read so far was delivered).
  // It returns true to read on (it may first wait for more), false to end the input there; an
  // error stops reading and is returned.
  std::function<StatusOr<bool>()> idle;
  // Optional: called after each round of records has reached the sink; true ends the input there
  // (records read ahead are dropped unsigned, and the reader's stats count them as consumed).
  std::function<bool()> done;
};

// For a redirect or gone record the features are empty (no words). `record` and `features` may be
// moved from.
using SignedRecordSink = std::function<Status(CrawlRecord& record, PageFeatures& features)>;

Status SignCrawl(const std::string& input, const CrawlSignerOptions& options, const SignedRecordSink& sink,
                 CrawlReaderStats* stats = nullptr);

class HtmlToText;

// Signs one record as SignCrawl signs each: the visible text of an HTML body (through `extractor`),
// any other body as it is; a record without content (a redirect, a gone page) gets the features of
// no words. `text` is scratch space (the extracted text), reused from call to call. The one
// extract -> sign step: SignCrawl's workers and a single page's probe (the Tier 1 server) both
// call it. Errors: Internal if the HTML parser fails (*out is then left as it was).
// Thread safety: one extractor and one `text` per thread; `signer` may be shared.
Status SignRecord(const CrawlRecord& record, const Signer& signer, HtmlToText* extractor, std::string* text,
                  PageFeatures* out);

// Worker count for a requested thread count (0 = one per core).
int ResolveThreads(int requested);

}  // namespace neardup
