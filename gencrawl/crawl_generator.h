// Synthetic web crawl generator: a deterministic, realistic JSON Lines crawl trace plus a truth
// file that says which records are near-duplicates of which, and how similar they really are.
//
//   CrawlGenOptions o;  o.pages = 100000;  o.seed = 7;
//   CrawlGenStats stats;
//   Status st = GenerateCrawl(o, crawl_file, truth_file, &stats);
//
// What the crawl looks like (one JSON object per line, in fetch order):
//   {"url":"https://www.example.com/news/slug-words-123.html", "fetched_at":"2024-06-03T00:09:48Z",
//    "market":"us", "popularity":12.5, "text":"..."}            -- or "html":"..." instead of "text",
//                                                                -- or "redirect_to":"<url>" instead,
//                                                                -- or "gone":true instead.
//  - url: absolute http/https URL; static paths and dynamic ones with query strings and session ids.
//  - fetched_at: RFC 3339 UTC, non-decreasing through the file, spread over 14 days from 2024-06-03.
//  - market: "us", "uk", "de" or "fr"; the host ends in .com, .co.uk, .de or .fr accordingly.
//  - popularity: heavy-tailed (Pareto, many zeros), >= 0.
//  - Page lengths: 20..1700 words, a log-normal body (median ~300) plus spikes (the largest near
//    237 words), like a real crawl.
//  - Words: ~80,000 syllable-made pseudo-words with Zipf frequencies (exponent 1.0), a few
//    numbers, accented letters and contractions ("xyz't", "xyz’t").
//  - html records are complete documents: doctype, <head> with <title>, <meta>, <style> and
//    <script> (whose contents contain words), a body with nav/div/h1/p/ul/blockquote structure,
//    inline <a>/<b>/<em>, comments, <img alt="..."> and entities (&amp; &nbsp; &#8217; &quot;
//    &copy;). The visible text is the text of <body> minus <script>, <style>, comments and
//    attributes; <head> (including <title>) is not visible text. The visible word sequence of an
//    html record equals that of the text record of the same content, word for word, so once an
//    extractor drops what is not visible, html and text give identical shingles. Every word
//    boundary next to a tag is also a whitespace or punctuation boundary.
//  - Every page carries its site's boilerplate (a nav header and a footer, 20..80 words per site)
//    unless the page is shorter than four times that.
//
// What the truth file holds (one line per crawl record, in the same order):
//   {"url":..., "line":<1-based crawl line>, "family":<id or -1>, "kind":"...",
//    "jaccard_to_source":<number>}
//  kind is one of:
//   original            the source page of a near-duplicate family
//   unique              a page with no family (family -1)
//   exact_copy          the source's text at another URL (same host with a session or print
//                       parameter, or another host)
//   mirror              the source's text on another host under the same path (html or text)
//   boilerplate         the source's article wrapped in another site's header and footer
//   edit                the source's text with word substitutions that aim at a shingle Jaccard just
//                       above or just below 0.5, 0.8, 0.9 or 0.95 (target = threshold ± 0.01..0.03)
//   redirect            a URL that redirects straight to a content page
//   redirect_chain      one hop of a chain of 2..4 redirects ending at a content page
//   redirect_cycle      one hop of a redirect cycle (a→b→a or a→b→c→a); such a chain never ends
//   recrawl_unchanged   a later fetch of an earlier URL, same text
//   recrawl_small_edit  a later fetch with a few words substituted (aiming at a Jaccard of
//                       0.80..0.99 to the previous fetch)
//   recrawl_rewrite     a later fetch with entirely new text (family -1)
//   recrawl_to_redirect a later fetch of an earlier content URL that now redirects (to another
//                       member of its family when it has one)
//   recrawl_gone        a later fetch of an earlier content URL that answered 404 or 410 (only with
//                       CrawlGenOptions::gone_share > 0); pages may still redirect to it
//  family: the family id (0, 1, ...) for family pages and for recrawls of them; for a redirect, the
//  family of the page it leads to; -1 otherwise.
//  jaccard_to_source: the shingle Jaccard (k = shingle_k, computed with HashWords + ShingleSet +
//  Jaccard from common/) of the record's visible text to its source: for family members the
//  family's original (as first fetched); for content recrawls the previous fetch of the same URL.
//  Omitted for originals, unique pages and redirects.
//
// Composition (approximately, for large `pages`): ~82% first fetches of content pages, of which
// ~36% belong to a family of two or more pages; ~6% redirect records; ~12% recrawls (gone_share
// of them gone records). Very small corpora (pages < 20) contain only content pages.
//
// Determinism: the output is a pure function of the options. The generator uses its own PRNG
// (xoshiro256**), its own distributions and its own exp/log built from IEEE basic operations, so
// the bytes are the same on every platform and standard library.
//
// Resources: output is streamed. Memory is a plan of ~150 bytes per record (page texts are
// regenerated from small descriptors when written), e.g. ~150 MB for 1,000,000 records.
//
// Ownership: the FILE handles stay owned by the caller; GenerateCrawl writes and flushes them but
// does not close them. `stats` may be null.
//
// Thread safety: GenerateCrawl is reentrant; concurrent calls must use distinct FILEs.
#pragma once

#include <cstdint>
#include <cstdio>

#include "common/status.h"

namespace neardup::gencrawl {

struct CrawlGenOptions {
  uint64_t pages = 10000;    // number of crawl records to emit (including recrawls and redirect records)
  uint64_t seed = 1;
  double html_share = 0.25;  // share of content records emitted as "html" (rest as "text")
  int shingle_k = 5;         // used only to compute the truth file's jaccard_to_source (and to aim edits)
  // Content drift between successive crawls of the same web: the page-length mixture of crawl
  // epoch `epoch` with drift `length_drift` per epoch (both 0: the mixture described above).
  // Epoch e: each length spike's weight is multiplied by exp(+-length_drift * e) (alternate
  // spikes grow and shrink, as templated sites gain or lose pages) and the log-normal body's
  // median by exp(length_drift * e / 2); spike positions do not move. Use another seed per epoch
  // for another crawl. Epoch 0 or drift 0 gives exactly the bytes of the undrifted generator.
  uint32_t epoch = 0;
  double length_drift = 0;
  // Share of the recrawls that find the page gone (404 or 410), written as {"url":..., ...,
  // "gone":true} (kind recrawl_gone) instead of the recrawl planned. Drawn from a stream of its
  // own: every other record is the same as with 0, which writes exactly the bytes of a generator
  // without the option.
  double gone_share = 0;
  // Drift within this crawl, in [0, 1]: the length distribution of later pages moves (a crawl's
  // mix changes as it goes). A first fetch's time is, with probability drift * s, the later of two
  // uniform draws and, with probability drift * (1 - s), the earlier, where s in [0, 1] is its
  // article length's place on a log scale from 20 to 1700 words: long pages come later, short ones
  // earlier, the lengths themselves unchanged. Drawn from the planning stream only when > 0 (0
  // writes exactly the bytes of a generator without the option).
  double drift = 0;
  // A recrawl a trace span later, in [0, 1] (0: none). When > 0 the output is two crawls of the
  // same web: the first ⌊pages/2⌋ records are the crawl the generator writes for that many pages
  // (times in its 14 days), the rest a second crawl 14 days later, in which a share
  // second_crawl_overlap of the records are refetches of distinct URLs of the first crawl's
  // content pages (popular ones more likely; only URLs the first crawl fetched once, so that the
  // refetch follows the URL's latest version; kinds recrawl_unchanged, _small_edit, _rewrite and
  // _to_redirect in the recrawls' proportions, 45/28/15/12%) and the others first fetches of new
  // pages (families and unique pages, no redirect records). Capped by the URLs available: the
  // missing refetches become new pages. 0 writes exactly the bytes of a generator without it.
  double second_crawl_overlap = 0;
};

struct CrawlGenStats {
  uint64_t records = 0;           // lines written to the crawl (== options.pages)
  uint64_t content_records = 0;   // records with "html" or "text" (first fetches and recrawls)
  uint64_t redirect_records = 0;  // records with "redirect_to" (including recrawl_to_redirect)
  uint64_t gone_records = 0;      // records with "gone": true (recrawl_gone)
  uint64_t recrawl_records = 0;   // recrawl_* records of every kind
  uint64_t families = 0;          // near-duplicate families (an original plus at least one member)
  uint64_t bytes = 0;             // bytes written to the crawl file
  uint64_t second_crawl_first_line = 0;  // 1-based line where the second crawl starts (0: none)
  uint64_t second_crawl_refetches = 0;   // records of the second crawl that refetch a first-crawl URL
};

// Writes JSON Lines crawl records to `crawl` and (if non-null) truth records to `truth`.
// Deterministic: the same options give byte-identical output on any machine.
// Errors:
//   InvalidArgument  crawl is null; pages == 0 or pages > 100,000,000; html_share is not in
//                    [0, 1] (or is NaN); shingle_k is not in 1..16; length_drift is not in
//                    [0, 0.2]; epoch > 100; gone_share is not in [0, 1];
//                    second_crawl_overlap is not in [0, 1], or is > 0 with pages < 2.
//   IoError          a write to either file failed (short fwrite, ferror, or fflush failure);
//                    the files then hold a prefix of the output.
Status GenerateCrawl(const CrawlGenOptions& options, std::FILE* crawl, std::FILE* truth, CrawlGenStats* stats);

}  // namespace neardup::gencrawl
