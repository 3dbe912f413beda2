// Rendering: a page's word ids as visible text, either plain (the "text" record) or inside a
// complete HTML document with head, scripts, styles, markup and entities (the "html" record).
// The crawl writer renders every content record, and the text of a record and of its source to
// measure the truth file's Jaccard.
//
// The layout is a function of the content's seeds and word positions only, never of the format,
// so html and text carry the same visible words. HTML-only decisions use separate bits or a
// separate stream.
//
// Thread safety: not thread-safe (the output target is per-call state); one Renderer per thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gencrawl/page_model.h"
#include "gencrawl/random.h"
#include "gencrawl/sites.h"
#include "gencrawl/vocabulary.h"

namespace neardup::gencrawl {

class Renderer {
 public:
  Renderer(const Vocabulary& vocab, const std::vector<Host>& hosts) : vocab_(vocab), hosts_(hosts) {}

  // Visible text of the page (the "text" record body).
  void Text(const Content& c, const PageWords& pw, std::string* out) const;

  // The complete HTML document. `site` is the host serving it (template), `page_seed` varies
  // per URL (scripts, comments).
  void Html(const Content& c, const PageWords& pw, const Host& site, uint64_t page_seed, std::string* out) const;

 private:
  enum class Mode { kSentence, kTitle, kPlain };

  // The page's visible part: nav header, article, footer; `deco` (html only) adds what is not
  // visible text.
  void Body(const Content& c, const PageWords& pw, Rng* deco) const;
  void Nav(const Host& h, const uint32_t* ids, uint32_t len) const;
  void Footer(const Host& h, const uint32_t* ids, uint32_t len) const;
  void Article(uint64_t seed, const uint32_t* ids, uint32_t len, Rng* deco) const;
  void Paragraph(Rng& r, const uint32_t* ids, uint32_t begin, uint32_t end, uint64_t hs) const;
  // Words ids[begin..end) with the separators between them. Every decision derives from
  // h = Mix(hs, position): the same bits in both formats for what is visible.
  void Words(const uint32_t* ids, uint32_t begin, uint32_t end, uint64_t hs, Mode mode) const;
  void Word(uint32_t id, bool cap, uint64_t h) const;

  const Vocabulary& vocab_;
  const std::vector<Host>& hosts_;
  mutable bool html_ = false;
  mutable std::string* out_ = nullptr;
};

}  // namespace neardup::gencrawl
