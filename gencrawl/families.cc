#include "gencrawl/families.h"

#include <algorithm>
#include <vector>

namespace neardup::gencrawl {

void AddFamily(PlanBuilder* b, uint32_t size) {
  CrawlPlan& p = b->plan();
  Rng& rng = b->rng();
  const int32_t fid = static_cast<int32_t>(p.families.size());
  const uint32_t first = static_cast<uint32_t>(p.recs.size());
  const uint32_t src_host = b->PickHost();
  const uint32_t src_url = b->NewPageUrl(src_host);
  const uint32_t src = b->NewContent(src_host);
  b->AddContentRec(kOriginal, src_url, src, kNone, fid, 10.0);
  bool print_used = false;
  std::vector<uint32_t> mirror_hosts;
  static constexpr double kThresholds[] = {0.5, 0.8, 0.9, 0.95};
  static constexpr double kThresholdWeights[] = {0.2, 0.25, 0.35, 0.2};
  for (uint32_t m = 1; m < size; ++m) {
    const double t = rng.Uniform();
    uint8_t kind = t < 0.22 ? kExactCopy : t < 0.38 ? kMirror : t < 0.58 ? kBoilerplate : kEdit;
    uint32_t url = kNone, content = src;
    if (kind == kMirror) {
      uint32_t h2 = kNone;
      for (int i = 0; i < 16 && h2 == kNone; ++i) {
        const uint32_t c = b->PickOtherHost(src_host);
        if (std::find(mirror_hosts.begin(), mirror_hosts.end(), c) == mirror_hosts.end()) h2 = c;
      }
      if (h2 == kNone) {
        kind = kExactCopy;
      } else {
        mirror_hosts.push_back(h2);
        Url u = p.urls[src_url];
        u.host = h2;
        url = b->AddUrl(u);
      }
    }
    if (kind == kBoilerplate) {
      const uint32_t h2 = b->PickOtherHost(src_host);
      Content c2 = p.contents[src];
      const uint32_t bp2 = b->hosts()[h2].bp_len;
      const bool fits = c2.article_len >= 3 * bp2 && c2.article_len + bp2 <= 1700;
      c2.bp_host = fits ? static_cast<int32_t>(h2) : -1;
      if (c2.bp_host == -1 && p.contents[src].bp_host == -1) {
        kind = kExactCopy;
      } else {
        url = b->NewPageUrl(h2);
        content = b->AddContent(c2);
      }
    }
    if (kind == kExactCopy) {
      if (rng.Chance(0.5)) {
        Url u = p.urls[src_url];
        u.seed = rng.Next();
        if (!print_used && rng.Chance(0.3)) {
          u.variant = 2;
          print_used = true;
        } else {
          u.variant = 1;
        }
        url = b->AddUrl(u);
      } else {
        url = b->NewPageUrl(b->PickOtherHost(src_host));
      }
    }
    if (kind == kEdit) {
      double u = rng.Uniform();
      size_t ti = 0;
      while (ti + 1 < 4 && u >= kThresholdWeights[ti]) u -= kThresholdWeights[ti++];
      const bool below = rng.Chance(0.5);
      const double off = 0.01 + 0.02 * rng.Uniform();
      const double target = kThresholds[ti] + (below ? -off : off);
      Content c2 = p.contents[src];
      c2.edit_seed[0] = rng.Next();
      c2.edit_shingles[0] = EditShinglesFor(WordCount(c2, b->hosts()), target, below);
      content = b->AddContent(c2);
      url = rng.Chance(0.5) ? b->NewPageUrl(src_host) : b->NewPageUrl(b->PickOtherHost(src_host));
    }
    b->AddContentRec(kind, url, content, src, fid, 4.0);
  }
  p.families.push_back(Family{first, size});
}

}  // namespace neardup::gencrawl
