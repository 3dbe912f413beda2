// Recrawls: later fetches of earlier content URLs, popular pages more often. A recrawl is
// unchanged, a small edit (aiming at Jaccard 0.80..0.99 to the previous fetch), a rewrite (new
// text), a redirect (to another member of the page's family when it has one), or, with
// CrawlGenOptions::gone_share, gone; and the second crawl's refetches of the first crawl's pages
// (CrawlGenOptions::second_crawl_overlap). A planning step of PlanCrawl (crawl_plan.h).
#pragma once

#include <cstdint>

#include "gencrawl/crawl_plan.h"

namespace neardup::gencrawl {

// Plans up to `count` recrawls of the first `content_recs` records (the first fetches of content
// pages), each at least 6 hours after the fetch it repeats; only pages fetched at least a day
// before the crawl's end are candidates. Returns the number planned.
uint64_t AddRecrawls(PlanBuilder* b, uint64_t count, uint32_t content_recs);

// The second crawl's refetches (CrawlGenOptions::second_crawl_overlap): up to `count` refetches of
// distinct first fetches among recs[0, content_recs) whose URL no record of recs[first_recrawl,
// end) fetched again (so that the first fetch is the URL's latest version), popular pages more
// likely, each unchanged, a small edit, a rewrite or a redirect as AddRecrawls draws them, at a
// time in [kTraceSeconds, 2 kTraceSeconds): the span after the first crawl's. Returns the number
// planned.
uint64_t AddSecondCrawlRefetches(PlanBuilder* b, uint64_t count, uint32_t content_recs, uint32_t first_recrawl);

// Turns each recrawl of recs[first, end) into a gone record (kRecrawlGone: the URL answered 404 or
// 410; no content, no redirect) with probability `share`, drawing from its own stream
// (Mix(seed, kSaltGone)), not the planning stream: every other record stays as it was. Returns
// the number turned.
uint64_t MakeRecrawlsGone(CrawlPlan* plan, uint32_t first, double share, uint64_t seed);

}  // namespace neardup::gencrawl
