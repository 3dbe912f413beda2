#include "document/html_text.h"

#include <myhtml/api.h>

#include <vector>

#include "common/utf8.h"

namespace neardup {
namespace {

bool Skipped(myhtml_tag_id_t tag) {
  return tag == MyHTML_TAG_SCRIPT || tag == MyHTML_TAG_STYLE || tag == MyHTML_TAG_NOSCRIPT ||
         tag == MyHTML_TAG_TEMPLATE || tag == MyHTML_TAG__COMMENT || tag == MyHTML_TAG_HEAD ||
         tag == MyHTML_TAG_TITLE;
}

}  // namespace

struct HtmlToText::Impl {
  myhtml_t* myhtml = nullptr;
  myhtml_tree_t* tree = nullptr;
  std::string repaired;
  std::vector<myhtml_tree_node_t*> stack;
  ~Impl() {
    if (tree != nullptr) myhtml_tree_destroy(tree);
    if (myhtml != nullptr) myhtml_destroy(myhtml);
  }
};

HtmlToText::HtmlToText(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HtmlToText::~HtmlToText() = default;

StatusOr<std::unique_ptr<HtmlToText>> HtmlToText::Create() {
  auto impl = std::make_unique<Impl>();
  impl->myhtml = myhtml_create();
  if (impl->myhtml == nullptr || MYHTML_FAILED(myhtml_init(impl->myhtml, MyHTML_OPTIONS_PARSE_MODE_SINGLE, 1, 0))) {
    return Internal("MyHTML: cannot initialise the parser");
  }
  impl->tree = myhtml_tree_create();
  if (impl->tree == nullptr || MYHTML_FAILED(myhtml_tree_init(impl->tree, impl->myhtml))) {
    return Internal("MyHTML: cannot initialise a tree");
  }
  return std::unique_ptr<HtmlToText>(new HtmlToText(std::move(impl)));
}

namespace {

// Parses `html` into im.tree, repairing invalid UTF-8 first.
template <typename ImplT>
Status Parse(ImplT& im, std::string_view html) {
  const char* data = html.data();
  size_t size = html.size();
  if (!IsValidUtf8(html)) {
    im.repaired.clear();
    AppendRepairedUtf8(html, &im.repaired);
    data = im.repaired.data();
    size = im.repaired.size();
  }
  myhtml_tree_clean(im.tree);
  if (MYHTML_FAILED(myhtml_parse(im.tree, MyENCODING_UTF_8, data, size))) {
    return Internal("MyHTML: parse failed");
  }
  return Status::Ok();
}

}  // namespace

Status HtmlToText::Extract(std::string_view html, std::string* text) {
  text->clear();
  Impl& im = *impl_;
  RETURN_IF_ERROR(Parse(im, html));
  // Depth-first walk without recursion: deeply nested markup must not overflow the stack.
  im.stack.clear();
  myhtml_tree_node_t* root = myhtml_tree_get_document(im.tree);
  if (root != nullptr) im.stack.push_back(myhtml_node_child(root));
  while (!im.stack.empty()) {
    myhtml_tree_node_t* node = im.stack.back();
    im.stack.pop_back();
    for (; node != nullptr; node = myhtml_node_next(node)) {
      const myhtml_tag_id_t tag = myhtml_node_tag_id(node);
      if (Skipped(tag)) continue;
      if (tag == MyHTML_TAG__TEXT) {
        size_t len = 0;
        const char* t = myhtml_node_text(node, &len);
        if (t != nullptr && len > 0) {
          if (!text->empty()) text->push_back(' ');
          text->append(t, len);
        }
        continue;
      }
      myhtml_tree_node_t* child = myhtml_node_child(node);
      if (child != nullptr) {
        // Visit the child subtree first, then continue with the next sibling.
        myhtml_tree_node_t* next = myhtml_node_next(node);
        if (next != nullptr) im.stack.push_back(next);
        im.stack.push_back(child);
        break;
      }
    }
  }
  return Status::Ok();
}

Status HtmlToText::Walk(std::string_view html, HtmlVisitor* visitor) {
  Impl& im = *impl_;
  RETURN_IF_ERROR(Parse(im, html));
  // Each stack entry is a node still to visit, or an element to leave.
  struct Entry {
    myhtml_tree_node_t* node;
    bool leave;
  };
  std::vector<Entry> stack;
  int hidden = 0;  // open elements whose text is not visible
  myhtml_tree_node_t* root = myhtml_tree_get_document(im.tree);
  if (root != nullptr && myhtml_node_child(root) != nullptr) stack.push_back({myhtml_node_child(root), false});
  while (!stack.empty()) {
    const Entry e = stack.back();
    stack.pop_back();
    const myhtml_tag_id_t tag = myhtml_node_tag_id(e.node);
    if (e.leave) {
      if (Skipped(tag)) --hidden;
      visitor->Leave();
      continue;
    }
    // The next sibling is visited after this node's subtree.
    if (myhtml_tree_node_t* next = myhtml_node_next(e.node); next != nullptr) stack.push_back({next, false});
    if (tag == MyHTML_TAG__COMMENT || tag == MyHTML_TAG__DOCTYPE) continue;
    if (tag == MyHTML_TAG__TEXT) {
      size_t len = 0;
      const char* t = myhtml_node_text(e.node, &len);
      if (t != nullptr && len > 0) visitor->Text(std::string_view(t, len), hidden == 0);
      continue;
    }
    size_t name_len = 0;
    const char* name = myhtml_tag_name_by_id(im.tree, tag, &name_len);
    visitor->Enter(name == nullptr ? std::string_view("unknown") : std::string_view(name, name_len));
    if (Skipped(tag)) ++hidden;
    stack.push_back({e.node, true});
    if (myhtml_tree_node_t* child = myhtml_node_child(e.node); child != nullptr) stack.push_back({child, false});
  }
  return Status::Ok();
}

}  // namespace neardup
