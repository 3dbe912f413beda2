#include "gencrawl/crawl_generator.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/json_write.h"
#include "common/rfc3339.h"
#include "document/shingle.h"
#include "document/tokenizer.h"
#include "gencrawl/page_model.h"
#include "gencrawl/random.h"
#include "gencrawl/renderer.h"
#include "gencrawl/sites.h"
#include "gencrawl/vocabulary.h"

namespace neardup::gencrawl {
namespace {

// ============================================================================================
// Records: what the plan holds besides URLs and contents.
// ============================================================================================

constexpr uint32_t kNone = 0xFFFFFFFFu;
constexpr uint32_t kTraceSeconds = 14 * 86400;

enum Kind : uint8_t {
  kOriginal, kUnique, kExactCopy, kMirror, kBoilerplate, kEdit, kRedirect, kRedirectChain,
  kRedirectCycle, kRecrawlUnchanged, kRecrawlSmallEdit, kRecrawlRewrite, kRecrawlToRedirect,
};
const char* const kKindNames[] = {"original", "unique", "exact_copy", "mirror", "boilerplate",
                                  "edit", "redirect", "redirect_chain", "redirect_cycle",
                                  "recrawl_unchanged", "recrawl_small_edit", "recrawl_rewrite",
                                  "recrawl_to_redirect"};

enum Format : uint8_t { kText, kHtml, kRedirectOnly };

struct Rec {
  double popularity;
  uint32_t time;         // seconds since the trace start
  uint32_t url;
  uint32_t content;      // kNone for redirects
  uint32_t target_url;   // redirect target, or kNone
  uint32_t src_content;  // content to measure jaccard_to_source against, or kNone
  int32_t family;
  uint8_t kind;
  uint8_t format;
};

struct Family {
  uint32_t first_rec;
  uint32_t size;
};

constexpr int64_t kTraceStartDay = DaysFromCivil(2024, 6, 3);

void AppendTimestamp(std::string* out, uint32_t offset_seconds) {
  AppendRfc3339(out, kTraceStartDay * 86400 + offset_seconds);
}

// ============================================================================================
// The generator: plans every record as a small descriptor, then writes them in fetch order,
// regenerating each page's words from its descriptor.
// ============================================================================================

class Generator {
 public:
  explicit Generator(const CrawlGenOptions& o)
      : o_(o),
        vocab_(GetVocabulary()),
        rng_(Mix(o.seed, kSaltPlan)),
        lengths_(o.epoch, o.length_drift) {}

  void Plan();
  Status Emit(std::FILE* crawl, std::FILE* truth, CrawlGenStats* stats);

 private:
  // ---- planning ----
  uint32_t PickHost() { return sites_.PickHost(rng_); }
  uint32_t PickOtherHost(uint32_t not_this) { return sites_.PickOtherHost(rng_, not_this); }
  uint32_t NewUrl(uint32_t host, uint8_t style) {
    urls_.push_back(Url{rng_.Next(), host, next_serial_++, style, 0, 0});
    return static_cast<uint32_t>(urls_.size() - 1);
  }
  uint32_t NewPageUrl(uint32_t host) {
    const Host& h = sites_.hosts[host];
    return NewUrl(host, rng_.Below(100) < h.share_a ? h.style_a : h.style_b);
  }
  uint32_t AddUrl(const Url& u) {
    urls_.push_back(u);
    return static_cast<uint32_t>(urls_.size() - 1);
  }
  uint32_t NewContent(uint32_t host) { return AddContent(MakeContent(rng_, lengths_, sites_.hosts, host)); }
  uint32_t AddContent(const Content& c) {
    contents_.push_back(c);
    return static_cast<uint32_t>(contents_.size() - 1);
  }
  uint8_t RandomFormat() { return rng_.Chance(o_.html_share) ? kHtml : kText; }
  uint32_t RandomTime() { return static_cast<uint32_t>(rng_.Below(kTraceSeconds)); }
  void AddRec(uint8_t kind, uint8_t format, uint32_t url, uint32_t content, uint32_t target, uint32_t src,
              int32_t family, double popularity, uint32_t time) {
    recs_.push_back(Rec{popularity, time, url, content, target, src, family, kind, format});
  }
  // A first fetch of a content page. The random draws are separate statements: the order in
  // which function arguments are evaluated is unspecified and differs between compilers.
  void AddContentRec(uint8_t kind, uint32_t url, uint32_t content, uint32_t src, int32_t family,
                     double popularity_scale) {
    const uint8_t format = RandomFormat();
    const double popularity = SamplePopularity(rng_, popularity_scale);
    const uint32_t time = RandomTime();
    AddRec(kind, format, url, content, kNone, src, family, popularity, time);
  }
  void MakeUnique();
  void MakeFamily(uint32_t size);
  void AddRedirects(uint64_t count, uint32_t content_recs);
  uint32_t RedirectSourceUrl(uint32_t target_url, bool allow_flip);
  uint64_t AddRecrawls(uint64_t count, uint32_t content_recs);

  // ---- writing ----
  double MeasureJaccard(const Rec& r, const std::string* own_text);

  const CrawlGenOptions& o_;
  const Vocabulary& vocab_;
  Rng rng_;
  const LengthModel lengths_;
  Sites sites_;
  std::vector<Url> urls_;
  std::vector<Content> contents_;
  std::vector<Rec> recs_;
  std::vector<Family> families_;
  std::unordered_set<uint32_t> flipped_;  // URLs that already have a scheme-flipped redirect source
  uint32_t next_serial_ = 1000;

  // Scratch for writing.
  PageWords pw_, src_pw_;
  std::string text_scratch_, src_text_;
  std::vector<uint64_t> hashes_;
};

void Generator::MakeUnique() {
  const uint32_t h = PickHost();
  const uint32_t url = NewPageUrl(h);
  const uint32_t c = NewContent(h);
  AddContentRec(kUnique, url, c, kNone, -1, 10.0);
}

void Generator::MakeFamily(uint32_t size) {
  const int32_t fid = static_cast<int32_t>(families_.size());
  const uint32_t first = static_cast<uint32_t>(recs_.size());
  const uint32_t src_host = PickHost();
  const uint32_t src_url = NewPageUrl(src_host);
  const uint32_t src = NewContent(src_host);
  AddContentRec(kOriginal, src_url, src, kNone, fid, 10.0);
  bool print_used = false;
  std::vector<uint32_t> mirror_hosts;
  static constexpr double kThresholds[] = {0.5, 0.8, 0.9, 0.95};
  static constexpr double kThresholdWeights[] = {0.2, 0.25, 0.35, 0.2};
  for (uint32_t m = 1; m < size; ++m) {
    const double t = rng_.Uniform();
    uint8_t kind = t < 0.22 ? kExactCopy : t < 0.38 ? kMirror : t < 0.58 ? kBoilerplate : kEdit;
    uint32_t url = kNone, content = src;
    if (kind == kMirror) {
      uint32_t h2 = kNone;
      for (int i = 0; i < 16 && h2 == kNone; ++i) {
        const uint32_t c = PickOtherHost(src_host);
        if (std::find(mirror_hosts.begin(), mirror_hosts.end(), c) == mirror_hosts.end()) h2 = c;
      }
      if (h2 == kNone) {
        kind = kExactCopy;
      } else {
        mirror_hosts.push_back(h2);
        Url u = urls_[src_url];
        u.host = h2;
        url = AddUrl(u);
      }
    }
    if (kind == kBoilerplate) {
      const uint32_t h2 = PickOtherHost(src_host);
      Content c2 = contents_[src];
      const uint32_t bp2 = sites_.hosts[h2].bp_len;
      const bool fits = c2.article_len >= 3 * bp2 && c2.article_len + bp2 <= 1700;
      c2.bp_host = fits ? static_cast<int32_t>(h2) : -1;
      if (c2.bp_host == -1 && contents_[src].bp_host == -1) {
        kind = kExactCopy;
      } else {
        url = NewPageUrl(h2);
        content = AddContent(c2);
      }
    }
    if (kind == kExactCopy) {
      if (rng_.Chance(0.5)) {
        Url u = urls_[src_url];
        u.seed = rng_.Next();
        if (!print_used && rng_.Chance(0.3)) {
          u.variant = 2;
          print_used = true;
        } else {
          u.variant = 1;
        }
        url = AddUrl(u);
      } else {
        url = NewPageUrl(PickOtherHost(src_host));
      }
    }
    if (kind == kEdit) {
      double u = rng_.Uniform();
      size_t ti = 0;
      while (ti + 1 < 4 && u >= kThresholdWeights[ti]) u -= kThresholdWeights[ti++];
      const bool below = rng_.Chance(0.5);
      const double off = 0.01 + 0.02 * rng_.Uniform();
      const double target = kThresholds[ti] + (below ? -off : off);
      Content c2 = contents_[src];
      c2.edit_seed[0] = rng_.Next();
      c2.edit_shingles[0] = EditShinglesFor(WordCount(c2, sites_.hosts), target, below);
      content = AddContent(c2);
      url = rng_.Chance(0.5) ? NewPageUrl(src_host) : NewPageUrl(PickOtherHost(src_host));
    }
    AddContentRec(kind, url, content, src, fid, 4.0);
  }
  families_.push_back(Family{first, size});
}

// A fresh URL that redirects to `target_url`: its http/https twin, an old path on the same host,
// or a shortener link.
uint32_t Generator::RedirectSourceUrl(uint32_t target_url, bool allow_flip) {
  const double v = rng_.Uniform();
  if (allow_flip && v < 0.4 && flipped_.insert(target_url).second) {
    Url u = urls_[target_url];
    u.flip = 1;
    return AddUrl(u);
  }
  if (v < 0.7) return NewUrl(urls_[target_url].host, rng_.Chance(0.5) ? kStyleOldPath : kStyleCgi);
  return NewUrl(sites_.shorteners[rng_.Below(sites_.shorteners.size())], kStyleShortener);
}

void Generator::AddRedirects(uint64_t count, uint32_t content_recs) {
  if (count == 0 || content_recs == 0) return;
  uint64_t used = 0;
  // Cycles: a->b->a and a->b->c->a, alternating; a few percent of the redirect records.
  const uint64_t cycles = count >= 20 ? std::max<uint64_t>(5, count * 3 / 100) : 0;
  for (bool two = true; used + (two ? 2 : 3) <= cycles; two = !two) {
    const uint32_t len = two ? 2 : 3;
    const uint32_t host = PickHost();
    const uint32_t first_url = static_cast<uint32_t>(urls_.size());
    for (uint32_t i = 0; i < len; ++i) NewUrl(host, kStyleLoginLoop);
    const uint32_t t0 = static_cast<uint32_t>(rng_.Below(kTraceSeconds - 8));
    for (uint32_t i = 0; i < len; ++i) {
      AddRec(kRedirectCycle, kRedirectOnly, first_url + i, kNone, first_url + (i + 1) % len, kNone, -1,
             SamplePopularity(rng_, 0.5), t0 + i);
    }
    used += len;
  }
  // Chains of 2..4 redirects, ~30% of the redirect records.
  const uint64_t chain_budget = count * 30 / 100;
  uint64_t chained = 0;
  while (chain_budget - chained >= 2) {
    const uint32_t len = static_cast<uint32_t>(std::min<uint64_t>(2 + rng_.Below(3), chain_budget - chained));
    const Rec& target = recs_[rng_.Below(content_recs)];
    const uint32_t target_url = target.url;
    const int32_t family = target.family;
    // Build from the end: hop[len-1] -> target, hop[i] -> hop[i+1].
    std::vector<uint32_t> hops(len);
    hops[len - 1] = RedirectSourceUrl(target_url, true);
    for (uint32_t i = len - 1; i-- > 0;) {
      if (i == 0 && rng_.Chance(0.5)) {
        hops[i] = NewUrl(sites_.shorteners[rng_.Below(sites_.shorteners.size())], kStyleShortener);
      } else {
        const uint32_t host = PickHost();
        hops[i] = NewUrl(host, rng_.Chance(0.5) ? kStyleOldPath : kStyleCgi);
      }
    }
    const uint32_t t0 = static_cast<uint32_t>(rng_.Below(kTraceSeconds - 8));
    for (uint32_t i = 0; i < len; ++i) {
      AddRec(kRedirectChain, kRedirectOnly, hops[i], kNone, i + 1 < len ? hops[i + 1] : target_url, kNone, family,
             SamplePopularity(rng_, 1.0), t0 + i);
    }
    chained += len;
  }
  used += chained;
  // Direct redirects: the rest.
  for (; used < count; ++used) {
    const Rec& target = recs_[rng_.Below(content_recs)];
    const uint32_t target_url = target.url;
    const int32_t family = target.family;
    const uint32_t src = RedirectSourceUrl(target_url, true);
    const double popularity = SamplePopularity(rng_, 1.0);
    const uint32_t time = RandomTime();
    AddRec(kRedirect, kRedirectOnly, src, kNone, target_url, kNone, family, popularity, time);
  }
}

uint64_t Generator::AddRecrawls(uint64_t count, uint32_t content_recs) {
  if (count == 0) return 0;
  // Candidates: first fetches early enough to be fetched again at least a day later.
  struct Cand {
    double key;
    uint32_t rec;
  };
  std::vector<Cand> cands;
  for (uint32_t i = 0; i < content_recs; ++i) {
    const Rec& r = recs_[i];
    if (r.time + 86400 >= kTraceSeconds) continue;
    // Efraimidis-Spirakis weighted sampling without replacement: popular pages are recrawled more.
    cands.push_back(Cand{DetLog(1.0 - rng_.Uniform()) / (1.0 + r.popularity), i});
  }
  count = std::min<uint64_t>(count, cands.size());
  if (count == 0) return 0;
  auto better = [](const Cand& a, const Cand& b) { return a.key != b.key ? a.key > b.key : a.rec < b.rec; };
  std::nth_element(cands.begin(), cands.begin() + static_cast<ptrdiff_t>(count - 1), cands.end(), better);
  cands.resize(count);
  std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) { return a.rec < b.rec; });
  std::vector<uint8_t> kinds(count);
  std::vector<uint8_t> becomes_redirect(content_recs, 0);
  for (uint64_t i = 0; i < count; ++i) {
    const double t = rng_.Uniform();
    kinds[i] = t < 0.45 ? kRecrawlUnchanged : t < 0.73 ? kRecrawlSmallEdit : t < 0.88 ? kRecrawlRewrite
                                                                                       : kRecrawlToRedirect;
    if (kinds[i] == kRecrawlToRedirect) becomes_redirect[cands[i].rec] = 1;
  }
  for (uint64_t i = 0; i < count; ++i) {
    const uint32_t ri = cands[i].rec;
    const Rec orig = recs_[ri];  // copy: recs_ grows below
    const uint32_t earliest = orig.time + 6 * 3600;
    const uint32_t t = earliest + static_cast<uint32_t>(rng_.Below(kTraceSeconds - earliest));
    const double pop = std::floor(orig.popularity * (0.8 + 0.45 * rng_.Uniform()) * 1000.0 + 0.5) / 1000.0;
    switch (kinds[i]) {
      case kRecrawlUnchanged:
        AddRec(kRecrawlUnchanged, orig.format, orig.url, orig.content, kNone, orig.content, orig.family, pop, t);
        break;
      case kRecrawlSmallEdit: {
        Content c2 = contents_[orig.content];
        const int layer = c2.edit_shingles[0] == 0 ? 0 : 1;
        // A few substituted words: aim at a Jaccard to the previous fetch uniform in [0.80, 0.99].
        c2.edit_seed[layer] = rng_.Next();
        c2.edit_shingles[layer] = EditShinglesFor(WordCount(c2, sites_.hosts), 0.80 + 0.19 * rng_.Uniform(), false);
        const uint32_t content = AddContent(c2);
        AddRec(kRecrawlSmallEdit, orig.format, orig.url, content, kNone, orig.content, orig.family, pop, t);
        break;
      }
      case kRecrawlRewrite: {
        const uint32_t content = NewContent(urls_[orig.url].host);
        AddRec(kRecrawlRewrite, orig.format, orig.url, content, kNone, orig.content, -1, pop, t);
        break;
      }
      default: {
        // Redirect to another member of the family (a mirror or copy), else to some other page.
        uint32_t target = kNone;
        if (orig.family >= 0) {
          const Family& f = families_[static_cast<size_t>(orig.family)];
          for (int tries = 0; tries < 8 && target == kNone; ++tries) {
            const uint32_t c = f.first_rec + static_cast<uint32_t>(rng_.Below(f.size));
            if (c != ri && !becomes_redirect[c] && recs_[c].url != orig.url) target = c;
          }
        }
        for (int tries = 0; tries < 64 && target == kNone; ++tries) {
          const uint32_t c = static_cast<uint32_t>(rng_.Below(content_recs));
          if (c != ri && !becomes_redirect[c] && recs_[c].url != orig.url) target = c;
        }
        if (target == kNone) {
          AddRec(kRecrawlUnchanged, orig.format, orig.url, orig.content, kNone, orig.content, orig.family, pop, t);
        } else {
          AddRec(kRecrawlToRedirect, kRedirectOnly, orig.url, kNone, recs_[target].url, kNone, recs_[target].family,
                 pop, t);
        }
        break;
      }
    }
  }
  return count;
}

void Generator::Plan() {
  const uint64_t n = o_.pages;
  const uint64_t recrawls = n >= 20 ? (n * 12 + 50) / 100 : 0;
  const uint64_t redirects = n >= 20 ? (n * 6 + 50) / 100 : 0;
  const uint64_t content = n - recrawls - redirects;
  sites_ = BuildSites(o_.seed, content, vocab_);
  recs_.reserve(n);
  urls_.reserve(n + n / 8);
  contents_.reserve(n);

  // Family sizes: 1 + m members, P(m) ~ m^-2 on 1..100. Start a family with the probability that
  // puts ~36% of the content pages into families.
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
  while (recs_.size() < content) {
    const uint64_t remaining = content - recs_.size();
    if (remaining >= 2 && rng_.Chance(p_family)) {
      const double u = rng_.Uniform() * acc;
      const uint32_t m = static_cast<uint32_t>(std::upper_bound(size_cdf.begin(), size_cdf.end(), u) - size_cdf.begin()) + 1;
      MakeFamily(static_cast<uint32_t>(std::min<uint64_t>(1 + std::min<uint32_t>(m, 100), remaining)));
    } else {
      MakeUnique();
    }
  }
  const uint32_t content_recs = static_cast<uint32_t>(recs_.size());
  AddRedirects(redirects, content_recs);
  AddRecrawls(recrawls, content_recs);
  while (recs_.size() < n) MakeUnique();  // tiny corpora: too few recrawl candidates
}

// ---- writing ----

double Generator::MeasureJaccard(const Rec& r, const std::string* own_text) {
  if (r.src_content == r.content) return 1.0;  // the very same text
  const Renderer render(vocab_, sites_.hosts);
  const int k = o_.shingle_k;
  if (own_text == nullptr) {
    text_scratch_.clear();
    render.Text(contents_[r.content], pw_, &text_scratch_);
    own_text = &text_scratch_;
  }
  hashes_.clear();
  HashWords(*own_text, &hashes_);
  const std::vector<uint64_t> own = ShingleSet(hashes_, k);
  BuildWords(vocab_, sites_.hosts, k, contents_[r.src_content], &src_pw_);
  src_text_.clear();
  render.Text(contents_[r.src_content], src_pw_, &src_text_);
  hashes_.clear();
  HashWords(src_text_, &hashes_);
  const std::vector<uint64_t> src = ShingleSet(hashes_, k);
  return Jaccard(own, src);
}

Status Generator::Emit(std::FILE* crawl, std::FILE* truth, CrawlGenStats* stats) {
  std::vector<uint32_t> order(recs_.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return recs_[a].time != recs_[b].time ? recs_[a].time < recs_[b].time : a < b;
  });
  const Renderer render(vocab_, sites_.hosts);
  const UrlSpeller speller(vocab_, sites_.hosts, o_.seed);
  CrawlGenStats st;
  st.families = families_.size();
  std::string out, tout, url, page;
  out.reserve(1 << 21);
  tout.reserve(1 << 17);
  auto flush = [](std::string* buf, std::FILE* f, const char* what) -> Status {
    if (!buf->empty() && std::fwrite(buf->data(), 1, buf->size(), f) != buf->size()) {
      return IoError(std::string("writing the ") + what + " file failed: " + std::strerror(errno));
    }
    buf->clear();
    return Status::Ok();
  };
  for (uint64_t line = 1; line <= order.size(); ++line) {
    const Rec& r = recs_[order[line - 1]];
    url.clear();
    speller.Append(urls_[r.url], &url);
    const size_t before = out.size();
    out.append("{\"url\":");
    AppendJsonString(&out, url);
    out.append(",\"fetched_at\":\"");
    AppendTimestamp(&out, r.time);
    out.append("\",\"market\":\"");
    out.append(kMarketNames[sites_.hosts[urls_[r.url].host].market]);
    out.append("\",\"popularity\":");
    AppendJsonNumber(&out, r.popularity);
    const std::string* own_text = nullptr;
    if (r.format == kRedirectOnly) {
      page.clear();
      speller.Append(urls_[r.target_url], &page);
      out.append(",\"redirect_to\":");
      AppendJsonString(&out, page);
      ++st.redirect_records;
    } else {
      BuildWords(vocab_, sites_.hosts, o_.shingle_k, contents_[r.content], &pw_);
      page.clear();
      if (r.format == kHtml) {
        render.Html(contents_[r.content], pw_, sites_.hosts[urls_[r.url].host], urls_[r.url].seed, &page);
        out.append(",\"html\":");
      } else {
        render.Text(contents_[r.content], pw_, &page);
        own_text = &page;
        out.append(",\"text\":");
      }
      AppendJsonString(&out, page);
      ++st.content_records;
    }
    out.append("}\n");
    st.bytes += out.size() - before;
    if (r.kind >= kRecrawlUnchanged) ++st.recrawl_records;
    ++st.records;
    if (truth != nullptr) {
      tout.append("{\"url\":");
      AppendJsonString(&tout, url);
      tout.append(",\"line\":");
      AppendUint(&tout, line);
      tout.append(",\"family\":");
      if (r.family < 0) tout.append("-1"); else AppendUint(&tout, static_cast<uint64_t>(r.family));
      tout.append(",\"kind\":\"");
      tout.append(kKindNames[r.kind]);
      tout.push_back('"');
      if (r.src_content != kNone && r.content != kNone) {
        tout.append(",\"jaccard_to_source\":");
        AppendJsonNumber(&tout, MeasureJaccard(r, own_text));
      }
      tout.append("}\n");
      if (tout.size() >= (1 << 16)) RETURN_IF_ERROR(flush(&tout, truth, "truth"));
    }
    if (out.size() >= (1 << 20)) RETURN_IF_ERROR(flush(&out, crawl, "crawl"));
  }
  RETURN_IF_ERROR(flush(&out, crawl, "crawl"));
  if (truth != nullptr) RETURN_IF_ERROR(flush(&tout, truth, "truth"));
  if (std::fflush(crawl) != 0 || std::ferror(crawl)) {
    return IoError(std::string("writing the crawl file failed: ") + std::strerror(errno));
  }
  if (truth != nullptr && (std::fflush(truth) != 0 || std::ferror(truth))) {
    return IoError(std::string("writing the truth file failed: ") + std::strerror(errno));
  }
  if (stats != nullptr) *stats = st;
  return Status::Ok();
}

}  // namespace

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
  if (options.epoch > 100) return InvalidArgument("GenerateCrawl: epoch must be in 0..100, got " + std::to_string(options.epoch));
  if (options.shingle_k < 1 || options.shingle_k > 16) {
    return InvalidArgument("GenerateCrawl: shingle_k must be in 1..16, got " + std::to_string(options.shingle_k));
  }
  Generator g(options);
  g.Plan();
  return g.Emit(crawl, truth, stats);
}

}  // namespace neardup::gencrawl
