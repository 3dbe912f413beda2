// Near-copy families: a source page (the family's "original") and the members derived from it,
// each an exact copy at another URL, a mirror on another host under the same path, the same
// article in another site's boilerplate, or an edit aimed just above or just below Jaccard 0.5,
// 0.8, 0.9 or 0.95. A planning step of PlanCrawl (crawl_plan.h).
#pragma once

#include <cstdint>

#include "gencrawl/crawl_plan.h"

namespace neardup::gencrawl {

// Plans a family of `size` >= 1 first fetches (the original and size - 1 members), as
// consecutive records, and records it in plan().families.
void AddFamily(PlanBuilder* b, uint32_t size);

}  // namespace neardup::gencrawl
