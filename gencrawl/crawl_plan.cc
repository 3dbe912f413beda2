#include "gencrawl/crawl_plan.h"

#include <algorithm>

#include "gencrawl/families.h"
#include "gencrawl/recrawls.h"
#include "gencrawl/redirects.h"
#include "gencrawl/random.h"
#include "gencrawl/vocabulary.h"

namespace neardup::gencrawl {

PlanBuilder::PlanBuilder(const CrawlGenOptions& o, uint64_t content_pages)
    : o_(o), rng_(Mix(o.seed, kSaltPlan)), lengths_(o.epoch, o.length_drift) {
  plan_.sites = BuildSites(o.seed, content_pages, GetVocabulary());
}

void PlanBuilder::AddContentRec(uint8_t kind, uint32_t url, uint32_t content, uint32_t src, int32_t family,
                                double popularity_scale) {
  const uint8_t format = rng_.Chance(o_.html_share) ? kHtml : kText;
  const double popularity = SamplePopularity(rng_, popularity_scale);
  uint32_t time = RandomTime();
  if (o_.drift > 0) {
    // Long pages later, short ones earlier (CrawlGenOptions::drift).
    static const double kLo = DetLog(20.0), kHi = DetLog(1700.0);
    const double len = std::max(20.0, static_cast<double>(plan_.contents[content].article_len));
    const double s = std::clamp((DetLog(len) - kLo) / (kHi - kLo), 0.0, 1.0);
    const uint32_t other = RandomTime();
    const double u = rng_.Uniform();
    if (u < o_.drift * s) time = std::max(time, other);
    else if (u < o_.drift) time = std::min(time, other);
  }
  AddRec(kind, format, url, content, kNone, src, family, popularity, time);
}

void PlanBuilder::AddUnique() {
  const uint32_t h = PickHost();
  const uint32_t url = NewPageUrl(h);
  const uint32_t c = NewContent(h);
  AddContentRec(kUnique, url, c, kNone, -1, 10.0);
}

namespace {

// Adds first fetches of content pages, near-copy families and unique pages, until the plan holds
// `end` records. Family sizes: 1 + m members, P(m) ~ m^-2 on 1..100; a family starts with the
// probability that puts ~36% of the content pages into families.
void AddFirstFetches(PlanBuilder* b, uint64_t end) {
  CrawlPlan& p = b->plan();
  std::vector<double> size_cdf(100);
  double acc = 0, mean_num = 0;
  for (int m = 1; m <= 100; ++m) {
    const double w = 1.0 / (static_cast<double>(m) * m);
    acc += w;
    mean_num += w * m;
    size_cdf[static_cast<size_t>(m - 1)] = acc;
  }
  const double mean_size = 1.0 + mean_num / acc;
  const double share = 0.36;
  const double p_family = share / (mean_size * (1.0 - share) + share);
  while (p.recs.size() < end) {
    const uint64_t remaining = end - p.recs.size();
    if (remaining >= 2 && b->rng().Chance(p_family)) {
      const double u = b->rng().Uniform() * acc;
      const uint32_t m = static_cast<uint32_t>(std::upper_bound(size_cdf.begin(), size_cdf.end(), u) - size_cdf.begin()) + 1;
      AddFamily(b, static_cast<uint32_t>(std::min<uint64_t>(1 + std::min<uint32_t>(m, 100), remaining)));
    } else {
      b->AddUnique();
    }
  }
}

}  // namespace

CrawlPlan PlanCrawl(const CrawlGenOptions& o) {
  // With a second crawl, the first is the first half of the records.
  const bool second = o.second_crawl_overlap > 0;
  const uint64_t n = second ? o.pages / 2 : o.pages;
  const uint64_t n2 = o.pages - n;
  const uint64_t refetches = second ? static_cast<uint64_t>(static_cast<double>(n2) * o.second_crawl_overlap + 0.5) : 0;
  const uint64_t recrawls = n >= 20 ? (n * 12 + 50) / 100 : 0;
  const uint64_t redirects = n >= 20 ? (n * 6 + 50) / 100 : 0;
  const uint64_t content = n - recrawls - redirects;
  PlanBuilder b(o, content);  // the second crawl's new pages on the same hosts
  CrawlPlan& p = b.plan();
  p.recs.reserve(o.pages);
  p.urls.reserve(o.pages + o.pages / 8);
  p.contents.reserve(o.pages);

  AddFirstFetches(&b, content);
  const uint32_t content_recs = static_cast<uint32_t>(p.recs.size());
  AddRedirects(&b, redirects, content_recs);
  const uint32_t first_recrawl = static_cast<uint32_t>(p.recs.size());
  AddRecrawls(&b, recrawls, content_recs);
  // From a stream of its own: the rest of the crawl is the same whatever the share.
  if (o.gone_share > 0) MakeRecrawlsGone(&p, first_recrawl, o.gone_share, o.seed);
  while (p.recs.size() < n) b.AddUnique();  // tiny corpora: too few recrawl candidates
  if (second) {
    // The second crawl, one trace span later: refetches of the first crawl's pages, then new
    // pages (their times drawn in the first span, moved by one span).
    AddSecondCrawlRefetches(&b, refetches, content_recs, first_recrawl);
    const size_t first_new = p.recs.size();
    AddFirstFetches(&b, o.pages);
    for (size_t i = first_new; i < p.recs.size(); ++i) p.recs[i].time += kTraceSeconds;
  }
  return b.Finish();
}

}  // namespace neardup::gencrawl
