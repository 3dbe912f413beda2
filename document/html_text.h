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
// The same parser also walks the parsed tree for callers that need its structure (the email
// module's tag-only XPaths and the text under each element):
//
//   struct Paths : HtmlVisitor { ... };
//   RETURN_IF_ERROR(extractor->Walk(html, &paths));
//
// Thread safety: an HtmlToText owns a parser and is used by one thread at a time; create one per
// thread (creation costs about a millisecond).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace neardup {

// Receives a parsed tree in document order (HtmlToText::Walk): every element's start and end, and
// every non-empty text node. Comments are not reported.
class HtmlVisitor {
 public:
  virtual ~HtmlVisitor() = default;
  // An element starts; `tag` is its lower-case name ("table", "td"; the parser's name for
  // unknown ones). Valid during the call only. The document's implied html, head and body
  // elements are reported like written ones.
  virtual void Enter(std::string_view tag) = 0;
  // The element last entered and not yet left ends.
  virtual void Leave() = 0;
  // A text node of the current element, entities decoded. `visible`: outside head, title,
  // script, style, noscript and template, i.e. part of what Extract returns.
  virtual void Text(std::string_view text, bool visible) = 0;
};

class HtmlToText {
 public:
  // Internal if MyHTML cannot allocate its parser.
  static StatusOr<std::unique_ptr<HtmlToText>> Create();
  ~HtmlToText();
  HtmlToText(const HtmlToText&) = delete;
  HtmlToText& operator=(const HtmlToText&) = delete;

  // Replaces *text with the visible text of `html`. Internal if the parser fails (out of memory).
  Status Extract(std::string_view html, std::string* text);

  // Parses `html` as Extract does and reports its tree to *visitor. Internal if the parser fails.
  // Deep nesting is walked without recursion.
  Status Walk(std::string_view html, HtmlVisitor* visitor);

 private:
  struct Impl;
  explicit HtmlToText(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace neardup
