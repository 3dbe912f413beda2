#include "gencrawl/renderer.h"

#include <algorithm>
#include <string_view>

namespace neardup::gencrawl {
namespace {

constexpr uint32_t kNoPos = 0xFFFFFFFFu;  // no open quote or span

}  // namespace

void Renderer::Text(const Content& c, const PageWords& pw, std::string* out) const {
  html_ = false;
  out_ = out;
  Body(c, pw, nullptr);
}

void Renderer::Html(const Content& c, const PageWords& pw, const Host& site, uint64_t page_seed, std::string* out) const {
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

void Renderer::Body(const Content& c, const PageWords& pw, Rng* deco) const {
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

void Renderer::Nav(const Host& h, const uint32_t* ids, uint32_t len) const {
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

void Renderer::Footer(const Host& h, const uint32_t* ids, uint32_t len) const {
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

void Renderer::Article(uint64_t seed, const uint32_t* ids, uint32_t len, Rng* deco) const {
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

void Renderer::Paragraph(Rng& r, const uint32_t* ids, uint32_t begin, uint32_t end, uint64_t hs) const {
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

void Renderer::Words(const uint32_t* ids, uint32_t begin, uint32_t end, uint64_t hs, Mode mode) const {
  uint32_t quote_end = kNoPos, span_end = kNoPos;
  bool quote_curly = false;
  const char* span_close = "";
  for (uint32_t i = begin; i < end; ++i) {
    const uint64_t h = Mix(hs, i);
    const bool last = i + 1 == end;
    if (mode == Mode::kSentence) {
      if (quote_end == kNoPos && !last && ((h >> 30) & 63) == 0) {
        quote_end = std::min<uint32_t>(end - 1, i + static_cast<uint32_t>((h >> 36) % 3));
        quote_curly = (h >> 40) & 1;
        out_->append(quote_curly ? "\xE2\x80\x9C" : (html_ ? "&quot;" : "\""));
      }
      if (html_ && span_end == kNoPos && ((h >> 42) & 31) == 0) {
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
      span_end = kNoPos;
    }
    if (quote_end == i) {
      out_->append(quote_curly ? "\xE2\x80\x9D" : (html_ ? "&quot;" : "\""));
      quote_end = kNoPos;
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

void Renderer::Word(uint32_t id, bool cap, uint64_t h) const {
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

}  // namespace neardup::gencrawl
