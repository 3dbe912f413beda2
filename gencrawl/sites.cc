#include "gencrawl/sites.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

namespace neardup::gencrawl {

uint32_t Sites::PickHost(Rng& r) const {
  const double u = r.Uniform() * host_cdf.back();
  const auto it = std::upper_bound(host_cdf.begin(), host_cdf.end(), u);
  return static_cast<uint32_t>(std::min<size_t>(static_cast<size_t>(it - host_cdf.begin()), host_cdf.size() - 1));
}

uint32_t Sites::PickOtherHost(Rng& r, uint32_t not_this) const {
  for (int i = 0; i < 32; ++i) {
    const uint32_t h = PickHost(r);
    if (h != not_this) return h;
  }
  return (not_this + 1) % static_cast<uint32_t>(host_cdf.size());
}

Sites BuildSites(uint64_t seed, uint64_t content_pages, const Vocabulary& vocab) {
  Sites sites;
  Rng r(Mix(seed, kSaltHost));
  const uint32_t n = static_cast<uint32_t>(std::clamp<uint64_t>(content_pages / 30, 20, 400000));
  std::unordered_set<std::string> seen;
  static const char* const kPrefixes[] = {"www.", "www.", "www.", "www.", "", "", "news.", "blog.",
                                          "shop.", "forum.", "m.", "en.", "docs."};
  auto make_label = [&](int extra) {
    std::string s;
    const int syl = 2 + static_cast<int>(r.Below(2)) + extra;
    for (int i = 0; i < syl; ++i) {
      s += Pick(r, kOnsets);
      s += Pick(r, kNuclei);
    }
    if (r.Chance(0.3)) s += Pick(r, kCodas);
    if (r.Chance(0.12)) {
      s += '-';
      s += vocab.UrlWord(r);
    }
    if (r.Chance(0.05)) AppendUint(&s, r.Below(100));
    return s;
  };
  const uint32_t n_short = 3 + n / 5000;
  for (uint32_t i = 0; i < n + n_short; ++i) {
    Host h;
    const double m = r.Uniform();
    h.market = m < 0.45 ? kUs : m < 0.65 ? kUk : m < 0.85 ? kDe : kFr;
    const bool shortener = i >= n;
    for (int attempt = 0;; ++attempt) {
      h.label = make_label(attempt / 4);
      h.name = shortener ? (r.Chance(0.5) ? "go." : "lnk.") : Pick(r, kPrefixes);
      h.name += h.label;
      h.name += kMarketTlds[h.market];
      if (seen.insert(h.name).second) break;
    }
    h.seed = r.Next();
    h.https = shortener || r.Chance(0.7);
    h.bp_len = 20 + static_cast<uint32_t>(r.Below(61));
    h.bp_header = h.bp_len * (40 + static_cast<uint32_t>(r.Below(31))) / 100;
    const bool dynamic = r.Chance(0.4);
    h.style_a = static_cast<uint8_t>((dynamic ? 4 : 0) + r.Below(4));
    h.style_b = static_cast<uint8_t>(r.Below(8));
    h.share_a = static_cast<uint8_t>(70 + r.Below(31));
    if (shortener) sites.shorteners.push_back(i);
    sites.hosts.push_back(std::move(h));
  }
  // Zipf-like host sizes: weight (rank + 4)^-0.9.
  sites.host_cdf.resize(n);
  double acc = 0;
  for (uint32_t i = 0; i < n; ++i) {
    acc += DetExp(-0.9 * DetLog(static_cast<double>(i) + 4.0));
    sites.host_cdf[i] = acc;
  }
  return sites;
}

void UrlSpeller::Append(const Url& u, std::string* out) const {
  const Host& h = hosts_[u.host];
  out->append(h.https != (u.flip != 0) ? "https://" : "http://");
  out->append(h.name);
  Rng sr(Mix(slug_seed_, u.serial));
  if (!AppendQueryPath(u, sr, out)) AppendPlainPath(u, sr, out);
  AppendVariant(u, out);
}

void UrlSpeller::AppendSlug(Rng& sr, char sep, bool cap, std::string* out) const {
  const uint32_t n = 2 + static_cast<uint32_t>(sr.Below(5));
  for (uint32_t i = 0; i < n; ++i) {
    if (i) out->push_back(sep);
    if (cap) AppendCapitalized(out, vocab_.UrlWord(sr)); else out->append(vocab_.UrlWord(sr));
  }
}

bool UrlSpeller::AppendQueryPath(const Url& u, Rng& sr, std::string* out) const {
  Rng qr(Mix(u.seed, kSaltSession));
  switch (u.style) {
    case kStylePhp:
      out->append("/article.php?id=");
      AppendUint(out, u.serial);
      out->append("&sessionid=");
      AppendHex(out, qr.Next(), 16);
      AppendHex(out, qr.Next(), 16);
      break;
    case kStyleJoomla:
      out->append("/index.php?option=com_content&view=article&id=");
      AppendUint(out, u.serial);
      out->append("&Itemid=");
      AppendUint(out, 100 + sr.Below(900));
      break;
    case kStyleAspx:
      out->append("/Product.aspx?pid=");
      AppendUint(out, u.serial);
      out->append("&ref=");
      out->append(vocab_.UrlWord(sr));
      out->append("&sid=");
      AppendHex(out, qr.Next(), 16);
      break;
    case kStyleListing:
      out->append("/list.jsp?cat=");
      out->append(vocab_.UrlWord(sr));
      out->append("&page=");
      AppendUint(out, 1 + sr.Below(40));
      out->append("&sort=date&id=");
      AppendUint(out, u.serial);
      break;
    case kStyleCgi:
      out->append("/cgi-bin/redirect.cgi?url_id=");
      AppendUint(out, u.serial);
      out->append("&ts=");
      AppendUint(out, 1100000000 + sr.Below(600000000));
      break;
    default:
      return false;
  }
  return true;
}

void UrlSpeller::AppendPlainPath(const Url& u, Rng& sr, std::string* out) const {
  switch (u.style) {
    case kStyleArticle:
      out->push_back('/');
      out->append(vocab_.UrlWord(sr));
      out->push_back('/');
      AppendSlug(sr, '-', false, out);
      out->push_back('-');
      AppendUint(out, u.serial);
      out->append(".html");
      break;
    case kStyleDated: {
      out->push_back('/');
      AppendUint(out, 2005 + sr.Below(20));
      out->push_back('/');
      const uint64_t mo = 1 + sr.Below(12);
      if (mo < 10) out->push_back('0');
      AppendUint(out, mo);
      out->push_back('/');
      AppendSlug(sr, '-', false, out);
      out->push_back('-');
      AppendUint(out, u.serial);
      out->push_back('/');
      break;
    }
    case kStyleWiki:
      out->append("/wiki/");
      AppendSlug(sr, '_', true, out);
      out->push_back('_');
      AppendUint(out, u.serial);
      break;
    case kStyleShort:
      out->append("/p/");
      AppendUint(out, u.serial);
      break;
    case kStyleOldPath:
      out->append("/old/");
      out->append(vocab_.UrlWord(sr));
      out->push_back('/');
      AppendUint(out, u.serial);
      out->append(".htm");
      break;
    case kStyleShortener: {
      static const char kB62[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
      uint64_t v = (static_cast<uint64_t>(u.serial) * 0x9E3779B97F4A7C15ull) & ((1ull << 42) - 1);
      out->push_back('/');
      for (int i = 0; i < 8; ++i) {
        out->push_back(kB62[v % 62]);
        v /= 62;
      }
      break;
    }
    default:  // kStyleLoginLoop
      out->append("/account/");
      AppendUint(out, u.serial);
      out->append("/login?next=%2Faccount%2F");
      AppendUint(out, u.serial);
      out->append("%2F");
      break;
  }
}

void UrlSpeller::AppendVariant(const Url& u, std::string* out) const {
  if (u.variant == 0) return;
  const bool has_query = out->find('?') != std::string::npos;
  out->push_back(has_query ? '&' : '?');
  if (u.variant == 1) {
    Rng vr(Mix(u.seed, kSaltVariant));
    out->append("sid=");
    AppendHex(out, vr.Next(), 16);
    AppendHex(out, vr.Next(), 16);
  } else {
    out->append("print=1");
  }
}

}  // namespace neardup::gencrawl
