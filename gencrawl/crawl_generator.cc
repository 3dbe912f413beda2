#include "gencrawl/crawl_generator.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/json_write.h"
#include "common/rfc3339.h"
#include "document/shingle.h"
#include "document/tokenizer.h"
#include "gencrawl/random.h"
#include "gencrawl/vocabulary.h"

namespace neardup::gencrawl {
namespace {

// ============================================================================================
// Page lengths: 55% log-normal (median 300 words), 45% spikes with small jitter, in [20, 1700].
// ============================================================================================

struct Spike {
  uint32_t words;
  double weight;
};
constexpr Spike kSpikes[] = {{237, 0.36}, {142, 0.14}, {64, 0.12}, {415, 0.14}, {760, 0.13}, {1190, 0.11}};

// The length mixture of one crawl epoch. Epoch 0 (or no drift) is the mixture above. Epoch e
// with drift d: component c's weight is multiplied by exp(d * e * kSpikeTrend[c]) and the weights
// renormalized (templated sites grow or shrink: alternate spikes gain and lose pages), and the
// body's median is multiplied by exp(d * e / 2) (free-form pages slowly get longer). The spikes
// stay where they are (a template's length does not change).
constexpr double kSpikeTrend[] = {1.0, -1.0, 1.0, -1.0, 1.0, -1.0};
struct LengthModel {
  bool drifted = false;
  double body_share = 0.55;
  double log_median = 0;
  double spike_weight[std::size(kSpikes)] = {};

  LengthModel(uint32_t epoch, double drift) {
    log_median = DetLog(300.0);
    for (size_t i = 0; i < std::size(kSpikes); ++i) spike_weight[i] = kSpikes[i].weight;
    if (epoch == 0 || drift == 0.0) return;
    drifted = true;
    const double t = drift * static_cast<double>(epoch);
    log_median += t / 2;
    double spikes = 0;
    for (size_t i = 0; i < std::size(kSpikes); ++i) {
      spike_weight[i] = 0.45 * kSpikes[i].weight * DetExp(t * kSpikeTrend[i]);
      spikes += spike_weight[i];
    }
    body_share = 0.55 / (0.55 + spikes);
    for (double& w : spike_weight) w /= spikes;  // within the spikes' share, as kSpikes
  }
};

uint32_t SampleLength(Rng& r, const LengthModel& m) {
  static const double kLogMedian = DetLog(300.0);
  const double log_median = m.drifted ? m.log_median : kLogMedian;
  if (r.Uniform() < m.body_share) {
    for (;;) {
      const double x = DetExp(log_median + 0.75 * r.Normal());
      if (x >= 20.0 && x < 1700.5) return static_cast<uint32_t>(x + 0.5);
    }
  }
  double u = r.Uniform();
  const Spike* s = &kSpikes[0];
  for (size_t i = 0; i < std::size(kSpikes); ++i) {
    s = &kSpikes[i];
    if (u < m.spike_weight[i]) break;
    u -= m.spike_weight[i];
  }
  const uint32_t jitter = s->words / 80 + 1;
  const uint32_t len = s->words - jitter + static_cast<uint32_t>(r.Below(2 * jitter + 1));
  return std::clamp<uint32_t>(len, 20, 1700);
}

// Pareto(alpha = 1.16) minus one, scaled; 15% zeros; rounded to 1/1000.
double SamplePopularity(Rng& r, double scale) {
  if (r.Chance(0.15)) return 0.0;
  const double u = 1.0 - r.Uniform();  // (0, 1]
  double x = (DetExp(-DetLog(u) / 1.16) - 1.0) * scale;
  if (x > 1e7) x = 1e7;
  return std::floor(x * 1000.0 + 0.5) / 1000.0;
}

// ============================================================================================
// Model: hosts, URLs, contents, records.
// ============================================================================================

constexpr uint32_t kNone = 0xFFFFFFFFu;
constexpr uint32_t kTraceSeconds = 14 * 86400;

enum Market : uint8_t { kUs, kUk, kDe, kFr };
const char* const kMarketNames[] = {"us", "uk", "de", "fr"};
const char* const kMarketTlds[] = {".com", ".co.uk", ".de", ".fr"};
const char* const kMarketLangs[] = {"en", "en-GB", "de", "fr"};

enum Kind : uint8_t {
  kOriginal, kUnique, kExactCopy, kMirror, kBoilerplate, kEdit, kRedirect, kRedirectChain,
  kRedirectCycle, kRecrawlUnchanged, kRecrawlSmallEdit, kRecrawlRewrite, kRecrawlToRedirect,
};
const char* const kKindNames[] = {"original", "unique", "exact_copy", "mirror", "boilerplate",
                                  "edit", "redirect", "redirect_chain", "redirect_cycle",
                                  "recrawl_unchanged", "recrawl_small_edit", "recrawl_rewrite",
                                  "recrawl_to_redirect"};

enum Format : uint8_t { kText, kHtml, kRedirectOnly };

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

// How to regenerate a page's word sequence.
struct Content {
  uint64_t article_seed = 0;
  uint64_t edit_seed[2] = {0, 0};
  uint32_t article_len = 0;
  uint32_t edit_shingles[2] = {0, 0};  // shingles to change per edit layer; 0 = no layer
  int32_t bp_host = -1;                // whose boilerplate surrounds the article; -1 none
};

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

// A page's words plus where the boilerplate ends.
struct PageWords {
  std::vector<uint32_t> ids;
  uint32_t header_len = 0;
  uint32_t footer_len = 0;
};

constexpr int64_t kTraceStartDay = DaysFromCivil(2024, 6, 3);

void AppendTimestamp(std::string* out, uint32_t offset_seconds) {
  AppendRfc3339(out, kTraceStartDay * 86400 + offset_seconds);
}

// ============================================================================================
// Rendering: word ids -> visible text, as plain text or inside an HTML document. The layout is a
// function of the content's seeds and word positions only, never of the format, so html and text
// carry the same visible words. HTML-only decisions use separate bits or a separate stream.
// ============================================================================================

class Renderer {
 public:
  Renderer(const Vocabulary& vocab, const std::vector<Host>& hosts) : vocab_(vocab), hosts_(hosts) {}

  // Visible text of the page (the "text" record body).
  void Text(const Content& c, const PageWords& pw, std::string* out) const {
    html_ = false;
    out_ = out;
    Body(c, pw, nullptr);
  }

  // The complete HTML document. `site` is the host serving it (template), `page_seed` varies
  // per URL (scripts, comments).
  void Html(const Content& c, const PageWords& pw, const Host& site, uint64_t page_seed, std::string* out) const {
    html_ = true;
    out_ = out;
    Rng tr(Mix(site.seed, kSaltTemplate));
    Rng pr(Mix(page_seed, kSaltPage));
    out->append("<!DOCTYPE html>\n<html lang=\"");
    out->append(kMarketLangs[site.market]);
    out->append("\">\n<head>\n<meta charset=\"utf-8\">\n<title>");
    const uint32_t title_words = std::min<uint32_t>(8, static_cast<uint32_t>(pw.ids.size()) - pw.header_len - pw.footer_len);
    for (uint32_t i = 0; i < title_words; ++i) {
      if (i) out->push_back(' ');
      AppendCapitalized(out, vocab_.words[pw.ids[pw.header_len + i]]);
    }
    out->append(" | ");
    out->append(site.label);
    out->append("</title>\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out->append("<meta name=\"description\" content=\"");
    for (uint32_t i = 0; i < 12 && pw.header_len + title_words + i < pw.ids.size() - pw.footer_len; ++i) {
      if (i) out->push_back(' ');
      out->append(vocab_.words[pw.ids[pw.header_len + title_words + i]]);
    }
    out->append("\">\n<link rel=\"stylesheet\" href=\"/static/css/");
    out->append(vocab_.UrlWord(tr));
    out->append(".css\">\n<style>\nbody { margin: 0; font: 14px/1.5 ");
    static const char* const kFonts[] = {"Georgia, serif", "Arial, Helvetica, sans-serif", "Verdana, sans-serif",
                                         "\"Times New Roman\", serif"};
    out->append(kFonts[tr.Below(4)]);
    out->append("; color: #222 }\n#header .nav li { display: inline; padding: 0 8px }\n.");
    out->append(vocab_.UrlWord(tr));
    out->push_back('-');
    out->append(vocab_.UrlWord(tr));
    out->append(" { color: #");
    AppendHex(out, tr.Next(), 6);
    out->append("; border-bottom: 1px solid #ddd }\n/* ");
    for (int i = 0; i < 4; ++i) {
      out->append(vocab_.UrlWord(tr));
      out->push_back(' ');
    }
    out->append("theme */\n</style>\n<script type=\"text/javascript\">\nvar ");
    const std::string& cfg = vocab_.UrlWord(tr);
    out->append(cfg);
    out->append("Config = {\"section\": \"");
    out->append(vocab_.UrlWord(pr));
    out->append("\", \"tags\": [\"");
    out->append(vocab_.UrlWord(pr));
    out->append("\", \"");
    out->append(vocab_.UrlWord(pr));
    out->append("\"]};\nfunction show");
    AppendCapitalized(out, vocab_.UrlWord(tr));
    out->append("(n) {\n  for (var i = 0; i < n; i++) {\n    document.write('<span class=\"");
    out->append(vocab_.UrlWord(tr));
    out->append("\">");
    out->append(vocab_.UrlWord(pr));
    out->push_back(' ');
    out->append(vocab_.UrlWord(pr));
    out->append("</span>');\n  }\n}\n</script>\n</head>\n<body>\n<div id=\"page\">\n");
    Body(c, pw, &pr);
    out->append("</div>\n<script>\n(function() { var s = document.createElement('script'); s.async = true;\n"
                "  s.src = '//static.");
    out->append(site.name);
    out->append("/js/");
    out->append(vocab_.UrlWord(pr));
    out->append(".js?v=");
    AppendUint(out, pr.Below(1000));
    out->append("'; document.body.appendChild(s); })();\n</script>\n</body>\n</html>\n");
  }

 private:
  enum class Mode { kSentence, kTitle, kPlain };

  void Body(const Content& c, const PageWords& pw, Rng* deco) const {
    const uint32_t n = static_cast<uint32_t>(pw.ids.size());
    const Host* bp = c.bp_host >= 0 ? &hosts_[static_cast<size_t>(c.bp_host)] : nullptr;
    if (bp != nullptr && pw.header_len > 0) Nav(*bp, pw.ids.data(), pw.header_len);
    if (deco != nullptr && deco->Chance(0.3)) {
      out_->append("<!-- ");
      out_->append(vocab_.UrlWord(*deco));
      out_->append(" cache hit, generated in ");
      AppendUint(out_, deco->Below(900) + 5);
      out_->append(" ms -->\n");
    }
    if (deco != nullptr) {
      out_->append("<div id=\"content\" class=\"");
      out_->append(vocab_.UrlWord(*deco));
      out_->append("\">\n");
    }
    Article(c.article_seed, pw.ids.data() + pw.header_len, n - pw.header_len - pw.footer_len, deco);
    if (deco != nullptr) out_->append("</div>\n");
    if (bp != nullptr && pw.footer_len > 0) Footer(*bp, pw.ids.data() + n - pw.footer_len, pw.footer_len);
  }

  void Nav(const Host& h, const uint32_t* ids, uint32_t len) const {
    Rng r(Mix(h.seed, kSaltNav));
    const uint64_t hs = Mix(h.seed, kSaltNavWords);
    if (html_) {
      out_->append("<div id=\"header\">\n<a class=\"logo\" href=\"/\"><img src=\"/img/logo.png\" alt=\"");
      out_->append(h.label);
      out_->append("\"></a>\n<ul class=\"nav\">\n");
    }
    for (uint32_t pos = 0; pos < len;) {
      const uint32_t item = std::min<uint32_t>(len - pos, 1 + static_cast<uint32_t>(r.Below(3)));
      if (html_) {
        out_->append("<li><a href=\"/");
        out_->append(vocab_.UrlWord(Mix(hs, pos)));
        out_->append("/\">");
      } else if (pos > 0) {
        out_->append(" | ");
      }
      Words(ids, pos, pos + item, hs, Mode::kTitle);
      if (html_) out_->append("</a></li>\n");
      pos += item;
    }
    out_->append(html_ ? "</ul>\n</div>\n" : "\n\n");
  }

  void Footer(const Host& h, const uint32_t* ids, uint32_t len) const {
    Rng r(Mix(h.seed, kSaltFooter));
    const uint64_t hs = Mix(h.seed, kSaltFooterWords);
    out_->append(html_ ? "<div id=\"footer\">\n<p>&copy; " : "\xC2\xA9 ");
    for (uint32_t pos = 0; pos < len;) {
      uint32_t s = 3 + static_cast<uint32_t>(r.Below(8));
      if (len - pos < s + 3) s = len - pos;
      if (pos > 0) out_->push_back(' ');
      Words(ids, pos, pos + s, hs, Mode::kSentence);
      pos += s;
    }
    out_->append(html_ ? "</p>\n</div>\n" : "\n");
  }

  void Article(uint64_t seed, const uint32_t* ids, uint32_t len, Rng* deco) const {
    Rng r(Mix(seed, kSaltBlocks));
    const uint64_t hs = Mix(seed, kSaltWords);
    uint32_t pos = std::min<uint32_t>(len, 3 + static_cast<uint32_t>(r.Below(7)));
    if (html_) out_->append("<h1>");
    Words(ids, 0, pos, hs, Mode::kTitle);
    out_->append(html_ ? "</h1>\n" : "\n\n");
    while (pos < len) {
      const uint32_t rem = len - pos;
      const double t = r.Uniform();
      if (deco != nullptr && deco->Chance(0.04)) {
        out_->append("<figure><img src=\"/img/");
        AppendUint(out_, deco->Below(100000));
        out_->append(".jpg\" alt=\"");
        out_->append(vocab_.UrlWord(*deco));
        out_->push_back(' ');
        out_->append(vocab_.UrlWord(*deco));
        out_->append("\" width=\"640\" height=\"360\"></figure>\n");
      }
      if (t < 0.06 && rem > 30) {
        const uint32_t n = 2 + static_cast<uint32_t>(r.Below(5));
        if (html_) out_->append("<h2>");
        Words(ids, pos, pos + n, hs, Mode::kTitle);
        out_->append(html_ ? "</h2>\n" : "\n\n");
        pos += n;
      } else if (t < 0.13 && rem > 12) {
        const uint32_t items = 2 + static_cast<uint32_t>(r.Below(5));
        if (html_) out_->append("<ul>\n");
        for (uint32_t i = 0; i < items && pos < len; ++i) {
          const uint32_t n = std::min<uint32_t>(len - pos, 2 + static_cast<uint32_t>(r.Below(9)));
          out_->append(html_ ? "<li>" : "* ");
          Words(ids, pos, pos + n, hs, Mode::kPlain);
          out_->append(html_ ? "</li>\n" : "\n");
          pos += n;
        }
        out_->append(html_ ? "</ul>\n" : "\n");
      } else if (t < 0.17 && rem > 12) {
        uint32_t n = std::min<uint32_t>(rem, 10 + static_cast<uint32_t>(r.Below(31)));
        if (rem - n < 8) n = rem;
        out_->append(html_ ? "<blockquote><p>" : "> ");
        Paragraph(r, ids, pos, pos + n, hs);
        out_->append(html_ ? "</p></blockquote>\n" : "\n\n");
        pos += n;
      } else {
        uint32_t n = std::min<uint32_t>(rem, 15 + static_cast<uint32_t>(r.Below(106)));
        if (rem - n < 8) n = rem;
        out_->append(html_ ? "<p>" : "");
        Paragraph(r, ids, pos, pos + n, hs);
        out_->append(html_ ? "</p>\n" : "\n\n");
        pos += n;
      }
    }
  }

  void Paragraph(Rng& r, const uint32_t* ids, uint32_t begin, uint32_t end, uint64_t hs) const {
    for (uint32_t pos = begin; pos < end;) {
      uint32_t s = 4 + static_cast<uint32_t>(r.Below(25));
      if (end - pos < s + 4) s = end - pos;
      if (pos > begin) {
        // A <br> between sentences in some html; always a separator in both formats.
        const uint64_t h = Mix(hs, pos);
        out_->append(html_ && ((h >> 58) & 15) == 0 ? "<br>\n" : " ");
      }
      Words(ids, pos, pos + s, hs, Mode::kSentence);
      pos += s;
    }
  }

  // Words ids[begin..end) with the separators between them. Every decision derives from
  // h = Mix(hs, position): the same bits in both formats for what is visible.
  void Words(const uint32_t* ids, uint32_t begin, uint32_t end, uint64_t hs, Mode mode) const {
    uint32_t quote_end = kNone, span_end = kNone;
    bool quote_curly = false;
    const char* span_close = "";
    for (uint32_t i = begin; i < end; ++i) {
      const uint64_t h = Mix(hs, i);
      const bool last = i + 1 == end;
      if (mode == Mode::kSentence) {
        if (quote_end == kNone && !last && ((h >> 30) & 63) == 0) {
          quote_end = std::min<uint32_t>(end - 1, i + static_cast<uint32_t>((h >> 36) % 3));
          quote_curly = (h >> 40) & 1;
          out_->append(quote_curly ? "\xE2\x80\x9C" : (html_ ? "&quot;" : "\""));
        }
        if (html_ && span_end == kNone && ((h >> 42) & 31) == 0) {
          span_end = std::min<uint32_t>(end - 1, i + static_cast<uint32_t>((h >> 47) % 3));
          switch ((h >> 50) % 4) {
            case 0:
              out_->append("<a href=\"/tag/");
              out_->append(vocab_.UrlWord(h >> 20));
              out_->append("\">");
              span_close = "</a>";
              break;
            case 1: out_->append("<b>"); span_close = "</b>"; break;
            case 2: out_->append("<em>"); span_close = "</em>"; break;
            default: out_->append("<strong>"); span_close = "</strong>"; break;
          }
        }
      }
      Word(ids[i], mode == Mode::kTitle || i == begin, h);
      if (span_end == i) {
        out_->append(span_close);
        span_end = kNone;
      }
      if (quote_end == i) {
        out_->append(quote_curly ? "\xE2\x80\x9D" : (html_ ? "&quot;" : "\""));
        quote_end = kNone;
      }
      if (mode != Mode::kSentence) {
        if (!last) out_->push_back(' ');
        continue;
      }
      if (last) {
        const uint64_t p = (h >> 24) & 31;
        out_->push_back(p == 0 ? '?' : p == 1 ? '!' : '.');
        continue;
      }
      const uint64_t g = (h >> 8) & 1023;
      if (g < 890) {
        out_->append(html_ && ((h >> 18) & 63) == 0 ? "&nbsp;" : " ");
      } else if (g < 960) {
        out_->append(", ");
      } else if (g < 972) {
        out_->append("; ");
      } else if (g < 984) {
        out_->append(": ");
      } else if (g < 994) {
        out_->append(html_ ? " &amp; " : " & ");
      } else if (g < 1004) {
        out_->append(" - ");
      } else {
        out_->append(" \xE2\x80\x94 ");
      }
    }
  }

  void Word(uint32_t id, bool cap, uint64_t h) const {
    const std::string& w = vocab_.words[id];
    const bool contract = (vocab_.flags[id] & kFlagContraction) && (h & 3) == 0;
    if (!contract) {
      if (cap) AppendCapitalized(out_, w); else out_->append(w);
      return;
    }
    const std::string_view sv(w);
    if (cap) AppendCapitalized(out_, sv.substr(0, sv.size() - 1)); else out_->append(sv.substr(0, sv.size() - 1));
    if ((h >> 2) & 1) {
      out_->append(html_ && ((h >> 3) & 1) ? "&#8217;" : "\xE2\x80\x99");
    } else {
      out_->push_back('\'');
    }
    out_->push_back(sv.back());
  }

  const Vocabulary& vocab_;
  const std::vector<Host>& hosts_;
  mutable bool html_ = false;
  mutable std::string* out_ = nullptr;
};

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
        slug_seed_(Mix(o.seed, kSaltSlug)),
        lengths_(o.epoch, o.length_drift) {}

  void Plan();
  Status Emit(std::FILE* crawl, std::FILE* truth, CrawlGenStats* stats);

 private:
  // ---- planning ----
  void BuildHosts(uint64_t content_pages);
  uint32_t PickHost() {
    const double u = rng_.Uniform() * host_cdf_.back();
    const auto it = std::upper_bound(host_cdf_.begin(), host_cdf_.end(), u);
    return static_cast<uint32_t>(std::min<size_t>(static_cast<size_t>(it - host_cdf_.begin()), host_cdf_.size() - 1));
  }
  uint32_t PickOtherHost(uint32_t not_this) {
    for (int i = 0; i < 32; ++i) {
      const uint32_t h = PickHost();
      if (h != not_this) return h;
    }
    return (not_this + 1) % static_cast<uint32_t>(host_cdf_.size());
  }
  uint32_t NewUrl(uint32_t host, uint8_t style) {
    urls_.push_back(Url{rng_.Next(), host, next_serial_++, style, 0, 0});
    return static_cast<uint32_t>(urls_.size() - 1);
  }
  uint32_t NewPageUrl(uint32_t host) {
    const Host& h = hosts_[host];
    return NewUrl(host, rng_.Below(100) < h.share_a ? h.style_a : h.style_b);
  }
  uint32_t AddUrl(const Url& u) {
    urls_.push_back(u);
    return static_cast<uint32_t>(urls_.size() - 1);
  }
  uint32_t NewContent(uint32_t host) {
    Content c;
    c.article_seed = rng_.Next();
    const uint32_t len = SampleLength(rng_, lengths_);
    const Host& h = hosts_[host];
    if (len >= 4 * h.bp_len) {
      c.bp_host = static_cast<int32_t>(host);
      c.article_len = len - h.bp_len;
    } else {
      c.article_len = len;
    }
    return AddContent(c);
  }
  uint32_t AddContent(const Content& c) {
    contents_.push_back(c);
    return static_cast<uint32_t>(contents_.size() - 1);
  }
  uint32_t WordCount(const Content& c) const {
    return c.article_len + (c.bp_host >= 0 ? hosts_[static_cast<size_t>(c.bp_host)].bp_len : 0);
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
  uint32_t EditShinglesFor(uint32_t words, double target, bool below) const;
  void AddRedirects(uint64_t count, uint32_t content_recs);
  uint32_t RedirectSourceUrl(uint32_t target_url, bool allow_flip);
  uint64_t AddRecrawls(uint64_t count, uint32_t content_recs);

  // ---- writing ----
  void BuildWords(const Content& c, PageWords* pw) const;
  void ApplyEdit(std::vector<uint32_t>* w, uint64_t seed, uint32_t shingles) const;
  void AppendUrl(uint32_t url, std::string* out) const;
  double MeasureJaccard(const Rec& r, const std::string* own_text);

  const CrawlGenOptions& o_;
  const Vocabulary& vocab_;
  Rng rng_;
  const uint64_t slug_seed_;
  const LengthModel lengths_;
  std::vector<Host> hosts_;
  std::vector<double> host_cdf_;       // content hosts only (indices 0..size-1)
  std::vector<uint32_t> shorteners_;   // host indices of URL shorteners
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

void Generator::BuildHosts(uint64_t content_pages) {
  Rng r(Mix(o_.seed, kSaltHost));
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
      s += vocab_.UrlWord(r);
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
    if (shortener) shorteners_.push_back(i);
    hosts_.push_back(std::move(h));
  }
  // Zipf-like host sizes: weight (rank + 4)^-0.9.
  host_cdf_.resize(n);
  double acc = 0;
  for (uint32_t i = 0; i < n; ++i) {
    acc += DetExp(-0.9 * DetLog(static_cast<double>(i) + 4.0));
    host_cdf_[i] = acc;
  }
}

void Generator::MakeUnique() {
  const uint32_t h = PickHost();
  const uint32_t url = NewPageUrl(h);
  const uint32_t c = NewContent(h);
  AddContentRec(kUnique, url, c, kNone, -1, 10.0);
}

// Shingles to change per side so that (n - c) / (n + c) lands on the target's side of it.
uint32_t Generator::EditShinglesFor(uint32_t words, double target, bool below) const {
  const double x = static_cast<double>(words) * (1.0 - target) / (1.0 + target);
  double c = below ? std::ceil(x) : std::floor(x);
  if (c < 1) c = 1;
  if (c > words) c = words;
  return static_cast<uint32_t>(c);
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
      const uint32_t bp2 = hosts_[h2].bp_len;
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
      c2.edit_shingles[0] = EditShinglesFor(WordCount(c2), target, below);
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
  return NewUrl(shorteners_[rng_.Below(shorteners_.size())], kStyleShortener);
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
        hops[i] = NewUrl(shorteners_[rng_.Below(shorteners_.size())], kStyleShortener);
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
        c2.edit_shingles[layer] = EditShinglesFor(WordCount(c2), 0.80 + 0.19 * rng_.Uniform(), false);
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
  BuildHosts(content);
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

void Generator::ApplyEdit(std::vector<uint32_t>* w, uint64_t seed, uint32_t shingles) const {
  const uint32_t n = static_cast<uint32_t>(w->size());
  const uint32_t k = static_cast<uint32_t>(o_.shingle_k);
  if (n == 0 || shingles == 0) return;
  Rng r(seed);
  auto substitute = [&](uint32_t pos) {
    const uint32_t old = (*w)[pos];
    uint32_t nw = vocab_.Sample(r);
    while (nw == old) nw = vocab_.Sample(r);
    (*w)[pos] = nw;
  };
  // A word at position p < k-1 lies in p+1 shingles: one substitution there changes the
  // remainder; the others (k shingles each) are spaced >= k apart so their shingles are disjoint.
  const uint32_t rem = shingles % k;
  uint32_t full = shingles / k;
  uint32_t start = k - 1;
  if (rem > 0 && rem - 1 < n) {
    substitute(rem - 1);
    start = rem - 1 + k;
  }
  if (full == 0 || start >= n) return;
  full = std::min(full, (n - 1 - start) / k + 1);
  const uint32_t slack = (n - 1 - start) - (full - 1) * k;
  std::vector<uint32_t> offs(full);
  for (auto& x : offs) x = static_cast<uint32_t>(r.Below(slack + 1));
  std::sort(offs.begin(), offs.end());
  for (uint32_t j = 0; j < full; ++j) substitute(start + offs[j] + j * k);
}

void Generator::BuildWords(const Content& c, PageWords* pw) const {
  pw->ids.clear();
  pw->header_len = pw->footer_len = 0;
  uint32_t footer[128];
  if (c.bp_host >= 0) {
    const Host& h = hosts_[static_cast<size_t>(c.bp_host)];
    Rng br(Mix(h.seed, kSaltBoilerplate));
    for (uint32_t i = 0; i < h.bp_header; ++i) pw->ids.push_back(vocab_.Sample(br));
    pw->footer_len = h.bp_len - h.bp_header;
    for (uint32_t i = 0; i < pw->footer_len; ++i) footer[i] = vocab_.Sample(br);
    pw->header_len = h.bp_header;
  }
  Rng ar(c.article_seed);
  for (uint32_t i = 0; i < c.article_len; ++i) pw->ids.push_back(vocab_.Sample(ar));
  pw->ids.insert(pw->ids.end(), footer, footer + pw->footer_len);
  for (int l = 0; l < 2; ++l) {
    if (c.edit_shingles[l] > 0) ApplyEdit(&pw->ids, c.edit_seed[l], c.edit_shingles[l]);
  }
}

void Generator::AppendUrl(uint32_t url, std::string* out) const {
  const Url& u = urls_[url];
  const Host& h = hosts_[u.host];
  out->append(h.https != (u.flip != 0) ? "https://" : "http://");
  out->append(h.name);
  Rng sr(Mix(slug_seed_, u.serial));
  Rng qr(Mix(u.seed, kSaltSession));
  auto slug = [&](char sep, bool cap) {
    const uint32_t n = 2 + static_cast<uint32_t>(sr.Below(5));
    for (uint32_t i = 0; i < n; ++i) {
      if (i) out->push_back(sep);
      if (cap) AppendCapitalized(out, vocab_.UrlWord(sr)); else out->append(vocab_.UrlWord(sr));
    }
  };
  switch (u.style) {
    case kStyleArticle:
      out->push_back('/');
      out->append(vocab_.UrlWord(sr));
      out->push_back('/');
      slug('-', false);
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
      slug('-', false);
      out->push_back('-');
      AppendUint(out, u.serial);
      out->push_back('/');
      break;
    }
    case kStyleWiki:
      out->append("/wiki/");
      slug('_', true);
      out->push_back('_');
      AppendUint(out, u.serial);
      break;
    case kStyleShort:
      out->append("/p/");
      AppendUint(out, u.serial);
      break;
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
    case kStyleOldPath:
      out->append("/old/");
      out->append(vocab_.UrlWord(sr));
      out->push_back('/');
      AppendUint(out, u.serial);
      out->append(".htm");
      break;
    case kStyleCgi:
      out->append("/cgi-bin/redirect.cgi?url_id=");
      AppendUint(out, u.serial);
      out->append("&ts=");
      AppendUint(out, 1100000000 + sr.Below(600000000));
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
  if (u.variant != 0) {
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
}

double Generator::MeasureJaccard(const Rec& r, const std::string* own_text) {
  if (r.src_content == r.content) return 1.0;  // the very same text
  const Renderer render(vocab_, hosts_);
  const int k = o_.shingle_k;
  if (own_text == nullptr) {
    text_scratch_.clear();
    render.Text(contents_[r.content], pw_, &text_scratch_);
    own_text = &text_scratch_;
  }
  hashes_.clear();
  HashWords(*own_text, &hashes_);
  const std::vector<uint64_t> own = ShingleSet(hashes_, k);
  BuildWords(contents_[r.src_content], &src_pw_);
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
  const Renderer render(vocab_, hosts_);
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
    AppendUrl(r.url, &url);
    const size_t before = out.size();
    out.append("{\"url\":");
    AppendJsonString(&out, url);
    out.append(",\"fetched_at\":\"");
    AppendTimestamp(&out, r.time);
    out.append("\",\"market\":\"");
    out.append(kMarketNames[hosts_[urls_[r.url].host].market]);
    out.append("\",\"popularity\":");
    AppendJsonNumber(&out, r.popularity);
    const std::string* own_text = nullptr;
    if (r.format == kRedirectOnly) {
      page.clear();
      AppendUrl(r.target_url, &page);
      out.append(",\"redirect_to\":");
      AppendJsonString(&out, page);
      ++st.redirect_records;
    } else {
      BuildWords(contents_[r.content], &pw_);
      page.clear();
      if (r.format == kHtml) {
        render.Html(contents_[r.content], pw_, hosts_[urls_[r.url].host], urls_[r.url].seed, &page);
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
