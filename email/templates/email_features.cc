#include "email/templates/email_features.h"

#include <xxhash.h>

#include <algorithm>
#include <cctype>
#include <unordered_map>

#include "document/shingle.h"
#include "document/tokenizer.h"

namespace neardup::email {
namespace {

// Subject words are moved to a word space of their own.
constexpr uint64_t kSubjectSalt = 0x5851F42D4C957F2Dull;

// Builds XPaths and text blocks from the parser's walk.
class StructureVisitor : public HtmlVisitor {
 public:
  explicit StructureVisitor(EmailFeatures* out) : out_(out) {}

  void Enter(std::string_view tag) override {
    FlushText();
    Frame& parent = frames_.back();
    int index = 0;
    bool found = false;
    for (auto& [name, count] : parent.children) {
      if (name == tag) {
        index = count++;
        found = true;
        break;
      }
    }
    if (!found) parent.children.emplace_back(tag, 1);
    Frame f;
    f.path_len = path_.size();
    frames_.push_back(std::move(f));
    path_ += '/';
    path_.append(tag);
    path_ += '[';
    path_ += std::to_string(index);
    path_ += ']';
    out_->xpaths.push_back(path_);
  }

  void Leave() override {
    if (frames_.size() <= 1) return;
    FlushText();
    path_.resize(frames_.back().path_len);
    frames_.pop_back();
  }

  void Text(std::string_view text, bool visible) override {
    if (!visible) return;
    // Collapse whitespace. Enter and Leave end a run, so a block is the text of one element
    // between its children (consecutive runs of one element are joined).
    for (char c : text) {
      const bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
      if (space) {
        pending_space_ = !text_.empty();
      } else {
        if (pending_space_) text_ += ' ';
        pending_space_ = false;
        text_ += c;
      }
    }
    text_path_ = path_;
  }

  // Ends the current run of text (called when the element structure changes).
  void FlushText() {
    if (!text_.empty()) {
      if (!out_->blocks.empty() && out_->blocks.back().xpath == text_path_) {
        out_->blocks.back().text += ' ';
        out_->blocks.back().text += text_;
      } else {
        out_->blocks.push_back({text_path_, text_});
      }
    }
    text_.clear();
    pending_space_ = false;
  }

  void Begin() {
    frames_.clear();
    frames_.emplace_back();
    path_.clear();
    text_.clear();
  }

 private:
  struct Frame {
    size_t path_len = 0;
    std::vector<std::pair<std::string_view, int>> children;  // tag -> children with it so far
  };
  EmailFeatures* out_;
  std::vector<Frame> frames_;
  std::string path_;
  std::string text_;
  std::string text_path_;
  bool pending_space_ = false;
};

bool HasDigit(std::string_view w) {
  return std::any_of(w.begin(), w.end(), [](char c) { return c >= '0' && c <= '9'; });
}

void AppendWordHashes(std::string_view text, uint64_t salt, std::vector<uint64_t>* out) {
  static const uint64_t kNumber = WordHash("#");
  for (const std::string& w : Tokenize(text)) out->push_back((HasDigit(w) ? kNumber : WordHash(w)) ^ salt);
}

}  // namespace

StatusOr<FingerprintMode> ParseFingerprintMode(std::string_view name) {
  if (name == "paper") return FingerprintMode::kPaper;
  if (name == "verified") return FingerprintMode::kVerified;
  return InvalidArgument("unknown fingerprint mode \"" + std::string(name) + "\" (expected \"verified\" or \"paper\")");
}

const char* FingerprintModeName(FingerprintMode mode) { return mode == FingerprintMode::kPaper ? "paper" : "verified"; }

std::string CanonicalAddress(std::string_view a) {
  if (const size_t lt = a.rfind('<'); lt != std::string_view::npos) {
    const size_t gt = a.find('>', lt);
    a = a.substr(lt + 1, gt == std::string_view::npos ? std::string_view::npos : gt - lt - 1);
  }
  while (!a.empty() && std::isspace(static_cast<unsigned char>(a.front()))) a.remove_prefix(1);
  while (!a.empty() && std::isspace(static_cast<unsigned char>(a.back()))) a.remove_suffix(1);
  std::string s;
  s.reserve(a.size());
  const size_t at = a.rfind('@');
  bool in_tag = false;
  for (size_t i = 0; i < a.size(); ++i) {
    const char c = a[i];
    if (at != std::string_view::npos && i < at) {
      if (c == '+') in_tag = true;
      if (in_tag) continue;
    }
    s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

uint64_t AddressHash(std::string_view address) {
  const std::string c = CanonicalAddress(address);
  return XXH3_64bits(c.data(), c.size());
}

uint64_t XPathMinHash(const std::vector<std::string>& xpaths, int i) {
  if (xpaths.empty()) return 0;
  uint64_t m = UINT64_MAX;
  for (const auto& x : xpaths) m = std::min(m, XXH3_64bits_withSeed(x.data(), x.size(), kMinHashSeeds[i]));
  return m;
}

std::array<uint64_t, kMinHashes> ClusterKeys(FingerprintMode mode, const EmailFeatures& f) {
  std::array<uint64_t, kMinHashes> keys = f.minhash;
  if (mode == FingerprintMode::kVerified) {
    for (auto& k : keys) k = XXH3_64bits_withSeed(&k, sizeof k, f.sender);
  }
  return keys;
}

std::vector<uint64_t> TextShingles(std::string_view subject, const std::vector<TextBlock>& blocks, int k) {
  std::vector<uint64_t> words;
  AppendWordHashes(subject, kSubjectSalt, &words);
  const std::vector<uint64_t> shingles = ShingleSet(words, k);
  words.clear();
  for (const auto& b : blocks) AppendWordHashes(b.text, 0, &words);
  const std::vector<uint64_t> body = ShingleSet(words, k);
  std::vector<uint64_t> merged;
  merged.reserve(shingles.size() + body.size());
  std::set_union(shingles.begin(), shingles.end(), body.begin(), body.end(), std::back_inserter(merged));
  return merged;
}

StatusOr<std::unique_ptr<FeatureExtractor>> FeatureExtractor::Create(int shingle_k) {
  if (shingle_k < 1) return InvalidArgument("shingle k must be at least 1, got " + std::to_string(shingle_k));
  ASSIGN_OR_RETURN(auto parser, HtmlToText::Create());
  return std::unique_ptr<FeatureExtractor>(new FeatureExtractor(std::move(parser), shingle_k));
}

Status FeatureExtractor::Extract(const EmailRecord& record, EmailFeatures* out) {
  out->xpaths.clear();
  out->blocks.clear();
  StructureVisitor v(out);
  v.Begin();
  RETURN_IF_ERROR(parser_->Walk(record.html, &v));
  v.FlushText();
  for (int i = 0; i < kMinHashes; ++i) out->minhash[i] = XPathMinHash(out->xpaths, i);
  out->shingles = TextShingles(record.subject, out->blocks, k_);
  out->sender = AddressHash(record.sender);
  out->recipient = AddressHash(record.recipient);
  return Status::Ok();
}

pb::StoredEmail ToStored(const EmailRecord& record, const EmailFeatures& f,
                         const std::array<uint64_t, kMinHashes>& keys) {
  pb::StoredEmail s;
  s.set_id(record.id);
  s.set_recipient(f.recipient);
  s.set_sender(f.sender);
  s.set_subject(record.subject);
  s.set_sent_at_ms(record.sent_at_ms.value_or(0));
  for (uint64_t k : keys) s.add_keys(k);
  for (const auto& b : f.blocks) {
    auto* tb = s.add_blocks();
    tb->set_xpath(b.xpath);
    tb->set_text(b.text);
  }
  s.mutable_shingles()->Assign(f.shingles.begin(), f.shingles.end());
  return s;
}

}  // namespace neardup::email
