// Output: writes a planned crawl (crawl_plan.h) as JSON Lines crawl records in fetch order, and
// the truth file beside it (family, kind, and the measured jaccard_to_source). The formats are
// documented in crawl_generator.h. Used by GenerateCrawl.
//
// Thread safety: reentrant; concurrent calls must use distinct FILEs.
#pragma once

#include <cstdio>

#include "common/status.h"
#include "gencrawl/crawl_generator.h"
#include "gencrawl/crawl_plan.h"

namespace neardup::gencrawl {

// Writes every record of `plan` to `crawl` and (if non-null) its truth record to `truth`, then
// flushes both; `stats` (may be null) gets the counts. IoError when a write fails.
Status WriteCrawl(const CrawlGenOptions& o, const CrawlPlan& plan, std::FILE* crawl, std::FILE* truth,
                  CrawlGenStats* stats);

}  // namespace neardup::gencrawl
