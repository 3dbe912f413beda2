// GenerateCrawl: checks the options, plans the whole crawl (crawl_plan.h), then writes it
// (crawl_writer.h).
#include "gencrawl/crawl_generator.h"

#include <string>

#include "gencrawl/crawl_plan.h"
#include "gencrawl/crawl_writer.h"

namespace neardup::gencrawl {

Status GenerateCrawl(const CrawlGenOptions& options, std::FILE* crawl, std::FILE* truth, CrawlGenStats* stats) {
  if (crawl == nullptr) return InvalidArgument("GenerateCrawl: the crawl file is null");
  if (options.pages == 0 || options.pages > 100000000) {
    return InvalidArgument("GenerateCrawl: pages must be in 1..100000000, got " + std::to_string(options.pages));
  }
  if (!(options.html_share >= 0.0 && options.html_share <= 1.0)) {
    return InvalidArgument("GenerateCrawl: html_share must be in [0, 1], got " + std::to_string(options.html_share));
  }
  if (!(options.length_drift >= 0.0 && options.length_drift <= 0.2)) {
    return InvalidArgument("GenerateCrawl: length_drift must be in [0, 0.2], got " + std::to_string(options.length_drift));
  }
  if (!(options.drift >= 0.0 && options.drift <= 1.0)) {
    return InvalidArgument("GenerateCrawl: drift must be in [0, 1], got " + std::to_string(options.drift));
  }
  if (!(options.gone_share >= 0.0 && options.gone_share <= 1.0)) {
    return InvalidArgument("GenerateCrawl: gone_share must be in [0, 1], got " + std::to_string(options.gone_share));
  }
  if (!(options.second_crawl_overlap >= 0.0 && options.second_crawl_overlap <= 1.0)) {
    return InvalidArgument("GenerateCrawl: second_crawl_overlap must be in [0, 1], got " +
                           std::to_string(options.second_crawl_overlap));
  }
  if (options.second_crawl_overlap > 0 && options.pages < 2) {
    return InvalidArgument("GenerateCrawl: a second crawl (second_crawl_overlap > 0) needs pages >= 2, got " +
                           std::to_string(options.pages));
  }
  if (options.epoch > 100) return InvalidArgument("GenerateCrawl: epoch must be in 0..100, got " + std::to_string(options.epoch));
  if (options.shingle_k < 1 || options.shingle_k > 16) {
    return InvalidArgument("GenerateCrawl: shingle_k must be in 1..16, got " + std::to_string(options.shingle_k));
  }
  const CrawlPlan plan = PlanCrawl(options);
  return WriteCrawl(options, plan, crawl, truth, stats);
}

}  // namespace neardup::gencrawl
