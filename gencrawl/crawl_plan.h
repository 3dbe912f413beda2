// The plan of a crawl: every record as a small descriptor (kind, URL, content, time, popularity,
// family), with the hosts, URLs and contents it refers to. GenerateCrawl plans the whole crawl
// first (PlanCrawl), then the crawl writer (crawl_writer.h) writes the records in fetch order,
// regenerating each page's text from its descriptor.
//
// PlanBuilder holds the planning stream and the primitives that the planning steps share; the
// steps live beside it: near-copy families (families.h), redirects (redirects.h) and recrawls
// (recrawls.h). They draw from the one stream in turn, so the order of PlanCrawl's calls is part
// of the output's definition.
//
// Thread safety: a PlanBuilder is used by one thread; a finished CrawlPlan is immutable.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "gencrawl/crawl_generator.h"
#include "gencrawl/page_model.h"
#include "gencrawl/random.h"
#include "gencrawl/sites.h"

namespace neardup::gencrawl {

constexpr uint32_t kNone = 0xFFFFFFFFu;         // no URL, content or record
constexpr uint32_t kTraceSeconds = 14 * 86400;  // the crawl's span

// Record kinds, as the truth file names them (crawl_generator.h describes each).
enum Kind : uint8_t {
  kOriginal, kUnique, kExactCopy, kMirror, kBoilerplate, kEdit, kRedirect, kRedirectChain,
  kRedirectCycle, kRecrawlUnchanged, kRecrawlSmallEdit, kRecrawlRewrite, kRecrawlToRedirect, kRecrawlGone,
};
inline constexpr const char* kKindNames[] = {"original", "unique", "exact_copy", "mirror", "boilerplate",
                                             "edit", "redirect", "redirect_chain", "redirect_cycle",
                                             "recrawl_unchanged", "recrawl_small_edit", "recrawl_rewrite",
                                             "recrawl_to_redirect", "recrawl_gone"};

enum Format : uint8_t { kText, kHtml, kRedirectOnly, kGoneOnly };

struct Rec {
  double popularity;
  uint32_t time;         // seconds since the trace start
  uint32_t url;
  uint32_t content;      // kNone for redirects and gone records
  uint32_t target_url;   // redirect target, or kNone
  uint32_t src_content;  // content to measure jaccard_to_source against, or kNone
  int32_t family;
  uint8_t kind;
  uint8_t format;
};

// A family's records are recs[first_rec, first_rec + size), its original first.
struct Family {
  uint32_t first_rec;
  uint32_t size;
};

struct CrawlPlan {
  Sites sites;
  std::vector<Url> urls;
  std::vector<Content> contents;
  std::vector<Rec> recs;  // in planning order; the writer sorts them by time
  std::vector<Family> families;
};

// The planning stream (Mix(seed, kSaltPlan)) and the plan being built. Every primitive that
// draws, draws from that stream.
class PlanBuilder {
 public:
  // Builds the hosts for `content_pages` first fetches of content pages.
  PlanBuilder(const CrawlGenOptions& o, uint64_t content_pages);

  Rng& rng() { return rng_; }
  CrawlPlan& plan() { return plan_; }
  const std::vector<Host>& hosts() const { return plan_.sites.hosts; }

  uint32_t PickHost() { return plan_.sites.PickHost(rng_); }
  uint32_t PickOtherHost(uint32_t not_this) { return plan_.sites.PickOtherHost(rng_, not_this); }
  // A fresh URL (new serial, so a new path) on `host`.
  uint32_t NewUrl(uint32_t host, uint8_t style) {
    plan_.urls.push_back(Url{rng_.Next(), host, next_serial_++, style, 0, 0});
    return static_cast<uint32_t>(plan_.urls.size() - 1);
  }
  // A fresh URL in one of the host's two page styles.
  uint32_t NewPageUrl(uint32_t host) {
    const Host& h = plan_.sites.hosts[host];
    return NewUrl(host, rng_.Below(100) < h.share_a ? h.style_a : h.style_b);
  }
  uint32_t AddUrl(const Url& u) {
    plan_.urls.push_back(u);
    return static_cast<uint32_t>(plan_.urls.size() - 1);
  }
  // A new page on `host` (MakeContent).
  uint32_t NewContent(uint32_t host) { return AddContent(MakeContent(rng_, lengths_, plan_.sites.hosts, host)); }
  uint32_t AddContent(const Content& c) {
    plan_.contents.push_back(c);
    return static_cast<uint32_t>(plan_.contents.size() - 1);
  }
  uint32_t RandomTime() { return static_cast<uint32_t>(rng_.Below(kTraceSeconds)); }
  void AddRec(uint8_t kind, uint8_t format, uint32_t url, uint32_t content, uint32_t target, uint32_t src,
              int32_t family, double popularity, uint32_t time) {
    plan_.recs.push_back(Rec{popularity, time, url, content, target, src, family, kind, format});
  }
  // A first fetch of a content page, as html or text. The random draws are separate statements:
  // the order in which function arguments are evaluated is unspecified and differs between
  // compilers.
  void AddContentRec(uint8_t kind, uint32_t url, uint32_t content, uint32_t src, int32_t family,
                     double popularity_scale);
  // A page with no family.
  void AddUnique();

  CrawlPlan Finish() { return std::move(plan_); }

 private:
  const CrawlGenOptions& o_;
  Rng rng_;
  const LengthModel lengths_;
  CrawlPlan plan_;
  uint32_t next_serial_ = 1000;
};

// The plan of the crawl `o` describes (options already validated): ~82% first fetches of content
// pages (unique pages and families), ~6% redirect records, ~12% recrawls (o.gone_share of them
// gone records). With o.second_crawl_overlap > 0 that is the first ⌊pages/2⌋ records, and a
// second crawl follows (CrawlGenOptions::second_crawl_overlap).
CrawlPlan PlanCrawl(const CrawlGenOptions& o);

}  // namespace neardup::gencrawl
