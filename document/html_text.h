// HtmlToText: the visible text of an HTML page, with a real HTML5 parser (MyHTML).
//
// The text a reader sees in the page body: drops the head (title and metadata), script, style,
// noscript and template elements and comments; decodes entities; puts a
// space between text nodes so that words in different elements never run together. Malformed
// markup is repaired the way browsers do; invalid UTF-8 is replaced before parsing, so any byte
// string is accepted.
//
//   ASSIGN_OR_RETURN(auto extractor, HtmlToText::Create());
//   std::string text;
//   RETURN_IF_ERROR(extractor->Extract(html, &text));
//
// Thread safety: an HtmlToText owns a parser and is used by one thread at a time; create one per
// thread (creation costs about a millisecond).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace neardup {

class HtmlToText {
 public:
  // Internal if MyHTML cannot allocate its parser.
  static StatusOr<std::unique_ptr<HtmlToText>> Create();
  ~HtmlToText();
  HtmlToText(const HtmlToText&) = delete;
  HtmlToText& operator=(const HtmlToText&) = delete;

  // Replaces *text with the visible text of `html`. Internal if the parser fails (out of memory).
  Status Extract(std::string_view html, std::string* text);

 private:
  struct Impl;
  explicit HtmlToText(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace neardup
