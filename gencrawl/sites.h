// The web the crawl visits: hosts (name, market, template seed, boilerplate size, URL styles), the
// URLs on them, and how a URL is spelled out. The planner (crawl_plan.h) builds the hosts and
// URLs; the page model and renderer read hosts; the crawl writer spells URLs.
//
// Thread safety: Sites and UrlSpeller are immutable once built.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gencrawl/random.h"
#include "gencrawl/vocabulary.h"

namespace neardup::gencrawl {

enum Market : uint8_t { kUs, kUk, kDe, kFr };
inline constexpr const char* kMarketNames[] = {"us", "uk", "de", "fr"};
inline constexpr const char* kMarketTlds[] = {".com", ".co.uk", ".de", ".fr"};
inline constexpr const char* kMarketLangs[] = {"en", "en-GB", "de", "fr"};

// URL path styles. 0..3 static, 4..7 dynamic, 8..11 only for redirect sources.
enum UrlStyle : uint8_t {
  kStyleArticle, kStyleDated, kStyleWiki, kStyleShort, kStylePhp, kStyleJoomla, kStyleAspx,
  kStyleListing, kStyleOldPath, kStyleCgi, kStyleShortener, kStyleLoginLoop,
};

struct Host {
  std::string name;   // full host name
  std::string label;  // the site's name (logo alt text, <title>)
  uint64_t seed = 0;  // template, boilerplate words
  uint32_t bp_len = 0;     // boilerplate words: header + footer
  uint32_t bp_header = 0;  // of which in the header
  uint8_t market = kUs;
  bool https = true;
  uint8_t style_a = 0, style_b = 0, share_a = 100;  // URL styles and percent of style_a
};

struct Url {
  uint64_t seed;    // session ids and other per-URL randomness
  uint32_t host;
  uint32_t serial;  // unique per path: the path's words and numbers derive from it
  uint8_t style;
  uint8_t variant;  // 0 plain, 1 with a session parameter, 2 print version
  uint8_t flip;     // 1: the other scheme than the host's
};

// The hosts of one crawl: content hosts first (Zipf-like sizes), then URL shorteners.
struct Sites {
  std::vector<Host> hosts;
  std::vector<double> host_cdf;     // content hosts only (indices 0..size-1)
  std::vector<uint32_t> shorteners;  // host indices of URL shorteners

  // A content host, by size.
  uint32_t PickHost(Rng& r) const;
  // A content host other than `not_this` (a few tries, then its neighbour).
  uint32_t PickOtherHost(Rng& r, uint32_t not_this) const;
};

// The hosts for a crawl of about `content_pages` first fetches: one per 30 pages (20..400,000),
// plus 3 + n / 5000 shorteners. Drawn from their own stream of `seed`.
Sites BuildSites(uint64_t seed, uint64_t content_pages, const Vocabulary& vocab);

// Spells out URLs: scheme, host, and a path (with query) whose words and numbers derive from the
// URL's serial, session ids from its seed.
class UrlSpeller {
 public:
  UrlSpeller(const Vocabulary& vocab, const std::vector<Host>& hosts, uint64_t crawl_seed)
      : vocab_(vocab), hosts_(hosts), slug_seed_(Mix(crawl_seed, kSaltSlug)) {}

  void Append(const Url& u, std::string* out) const;

 private:
  // Append's steps, after the scheme and host. The URL's path and query for the styles that have
  // a query (PHP, Joomla, ASPX, listings, CGI); false for the others.
  bool AppendQueryPath(const Url& u, Rng& sr, std::string* out) const;
  // The path of the other styles (article, dated, wiki, short, old path, shortener, login loop).
  void AppendPlainPath(const Url& u, Rng& sr, std::string* out) const;
  // A slug of 2 to 6 URL words joined by `sep` (capitalized when `cap`), drawn from sr.
  void AppendSlug(Rng& sr, char sep, bool cap, std::string* out) const;
  // The session id or print variant of a URL that has one.
  void AppendVariant(const Url& u, std::string* out) const;

  const Vocabulary& vocab_;
  const std::vector<Host>& hosts_;
  const uint64_t slug_seed_;
};

}  // namespace neardup::gencrawl
