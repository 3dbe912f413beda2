// Redirect records: direct redirects, chains of 2..4 hops ending at a content page, and cycles
// (a->b->a, a->b->c->a). A redirect's source URL is the target's http/https twin, an old path or
// CGI link on a host, or a shortener link. A planning step of PlanCrawl (crawl_plan.h).
#pragma once

#include <cstdint>

#include "gencrawl/crawl_plan.h"

namespace neardup::gencrawl {

// Plans `count` redirect records (a few percent cycles, ~30% chain hops, the rest direct), whose
// targets are among the first `content_recs` records (the first fetches of content pages).
void AddRedirects(PlanBuilder* b, uint64_t count, uint32_t content_recs);

}  // namespace neardup::gencrawl
