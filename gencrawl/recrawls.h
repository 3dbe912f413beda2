// Recrawls: later fetches of earlier content URLs, popular pages more often. A recrawl is
// unchanged, a small edit (aiming at Jaccard 0.80..0.99 to the previous fetch), a rewrite (new
// text), or a redirect (to another member of the page's family when it has one). A planning step
// of PlanCrawl (crawl_plan.h).
#pragma once

#include <cstdint>

#include "gencrawl/crawl_plan.h"

namespace neardup::gencrawl {

// Plans up to `count` recrawls of the first `content_recs` records (the first fetches of content
// pages), each at least 6 hours after the fetch it repeats; only pages fetched at least a day
// before the crawl's end are candidates. Returns the number planned.
uint64_t AddRecrawls(PlanBuilder* b, uint64_t count, uint32_t content_recs);

}  // namespace neardup::gencrawl
