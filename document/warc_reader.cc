#include "document/warc_reader.h"

#include <isa-l/igzip_lib.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <sys/stat.h>

#include "common/rfc3339.h"
#include "common/utf8.h"

namespace neardup {
namespace {

constexpr size_t kReadChunk = 1 << 16;
constexpr size_t kMaxHeaderBytes = 1 << 16;  // a WARC or HTTP head longer than this is corrupt

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// "Name: value" lines (CRLF or LF ended) after the first line of `head`; continuation lines
// (starting with a space or tab) join the previous value.
struct Headers {
  std::vector<std::pair<std::string, std::string>> fields;  // names lower-cased
  const std::string* Get(std::string_view lower_name) const {
    for (const auto& [k, v] : fields) {
      if (k == lower_name) return &v;
    }
    return nullptr;
  }
};

// Parses the header lines of `head` after its first line into *h; false when a line has no colon.
bool ParseHeaderLines(std::string_view head, std::string_view* first_line, Headers* h) {
  size_t eol = head.find('\n');
  *first_line = Trim(head.substr(0, eol));
  size_t at = eol == std::string_view::npos ? head.size() : eol + 1;
  while (at < head.size()) {
    eol = head.find('\n', at);
    std::string_view line = head.substr(at, eol == std::string_view::npos ? std::string_view::npos : eol - at);
    at = eol == std::string_view::npos ? head.size() : eol + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if ((line.front() == ' ' || line.front() == '\t') && !h->fields.empty()) {
      h->fields.back().second += ' ';
      h->fields.back().second += Trim(line);
      continue;
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return false;
    h->fields.emplace_back(Lower(Trim(line.substr(0, colon))), std::string(Trim(line.substr(colon + 1))));
  }
  return true;
}

bool ParseUint(std::string_view s, uint64_t* out) {
  s = Trim(s);
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

// ---- Byte sources: the decompressed stream and where its bytes lie in the file -----------------

class Source {
 public:
  virtual ~Source() = default;
  // Appends up to kReadChunk bytes to *out; returns how many (0: the end, or an I/O error).
  virtual size_t Read(std::string* out) = 0;
  const Status& status() const { return status_; }
  // Bytes of the file consumed so far.
  virtual uint64_t consumed() const = 0;
  // Where the decompressed stream's offset u lies in the file, for a report.
  virtual std::string Where(uint64_t u) const { return "byte " + std::to_string(u); }
  // The end of the last unit (gzip member) that ended at or before stream offset u, as a file
  // offset (a plain file: u itself). Forgets what it no longer needs for offsets below u.
  virtual uint64_t FileOffsetAt(uint64_t u) { return u; }
  // Takes the first break in the stream at or before offset `upto` (a gzip member that did not
  // inflate was skipped there): where, and why; false if none.
  virtual bool TakeBreak(uint64_t /*upto*/, uint64_t* /*at*/, std::string* /*why*/) { return false; }

 protected:
  Status status_;
};

class PlainSource final : public Source {
 public:
  PlainSource(std::FILE* f, std::string path) : f_(f), path_(std::move(path)) {}
  ~PlainSource() override { std::fclose(f_); }
  size_t Read(std::string* out) override {
    const size_t old = out->size();
    out->resize(old + kReadChunk);
    const size_t n = std::fread(out->data() + old, 1, kReadChunk, f_);
    out->resize(old + n);
    if (n == 0 && std::ferror(f_)) status_ = IoError("crawl " + path_ + ": read: " + std::strerror(errno));
    consumed_ += n;
    return n;
  }
  uint64_t consumed() const override { return consumed_; }

 private:
  std::FILE* f_;
  std::string path_;
  uint64_t consumed_ = 0;
};

// Multi-member gzip: each member is inflated in turn by ISA-L's igzip (a crawl's .warc.gz is
// read once for the map's sample and once for the run, so inflating is on the run's path); one
// that fails to inflate is reported as a break in the stream, and inflating goes on at the next
// gzip header (1f 8b 08) after the failure.
class GzipSource final : public Source {
 public:
  GzipSource(std::FILE* f, std::string path) : f_(f), path_(std::move(path)) {
    ResetInflate();
    members_.push_back({0, 0, 0, 0, false});
  }
  ~GzipSource() override { std::fclose(f_); }

  size_t Read(std::string* out) override {
    const size_t old = out->size();
    out->resize(old + kReadChunk);
    size_t made = 0;
    while (made == 0 && status_.ok()) {
      if (in_pos_ == in_.size() && !FillInput()) break;
      z_.next_in = reinterpret_cast<uint8_t*>(in_.data() + in_pos_);
      z_.avail_in = static_cast<uint32_t>(in_.size() - in_pos_);
      z_.next_out = reinterpret_cast<uint8_t*>(out->data() + old);
      z_.avail_out = static_cast<uint32_t>(kReadChunk);
      const int rc = isal_inflate(&z_);
      // At a member's end igzip hands back the input bytes it had read past the trailer.
      const size_t used = in_.size() - in_pos_ - z_.avail_in;
      in_pos_ += used;
      made = kReadChunk - z_.avail_out;
      stream_ += made;
      if (rc == ISAL_DECOMP_OK && z_.block_state == ISAL_BLOCK_FINISH) {
        Member& m = members_.back();
        m.u_end = stream_;
        m.c_end = in_base_ + in_pos_;
        m.ended = true;
        ResetInflate();
        // Padding zeros after the last member (some writers add them) end the stream quietly.
        SkipZeros();
        members_.push_back({stream_, in_base_ + in_pos_, 0, 0, false});
      } else if (rc < 0 || rc == ISAL_NEED_DICT) {
        const uint64_t failed_at = in_base_ + in_pos_;
        ResetInflate();
        const uint64_t member_start = members_.back().c_start;
        const bool found = SeekNextMember();
        breaks_.push_back({stream_, "gzip member at byte " + std::to_string(member_start) + " does not inflate (" +
                                        InflateError(rc) + " by byte " + std::to_string(failed_at) + ")" +
                                        (found ? "; went on at the gzip member at byte " + std::to_string(in_base_ + in_pos_)
                                               : "; no gzip member after it")});
        members_.push_back({stream_, in_base_ + in_pos_, 0, 0, false});
        if (!found) break;
      } else if (rc != ISAL_DECOMP_OK && rc != ISAL_END_INPUT && rc != ISAL_OUT_OVERFLOW) {
        status_ = Internal("crawl " + path_ + ": igzip failed (" + std::to_string(rc) + ")");
      }
    }
    out->resize(old + made);
    return made;
  }

  uint64_t consumed() const override { return in_base_ + in_pos_; }

  std::string Where(uint64_t u) const override {
    for (auto it = members_.rbegin(); it != members_.rend(); ++it) {
      if (it->u_start <= u) {
        return "byte " + std::to_string(u) + " of the decompressed stream (gzip member at byte " +
               std::to_string(it->c_start) + ")";
      }
    }
    return "byte " + std::to_string(u) + " of the decompressed stream";
  }

  uint64_t FileOffsetAt(uint64_t u) override {
    for (const Member& m : members_) {
      if (!m.ended) continue;  // the current member, or one that did not inflate
      if (m.u_end > u) break;
      last_end_ = std::max(last_end_, m.c_end);
    }
    // Keep the member holding offset u (and the ones after it) for Where().
    while (members_.size() > 1 && members_[1].u_start <= u) members_.pop_front();
    return last_end_;
  }

  bool TakeBreak(uint64_t upto, uint64_t* at, std::string* why) override {
    if (breaks_.empty() || breaks_.front().at > upto) return false;
    *at = breaks_.front().at;
    *why = std::move(breaks_.front().why);
    breaks_.pop_front();
    return true;
  }

 private:
  struct Member {
    uint64_t u_start, c_start;  // where it starts in the stream and in the file
    uint64_t u_end, c_end;      // where it ends, once ended
    bool ended;
  };
  struct Gap {
    uint64_t at;
    std::string why;
  };

  // Drops consumed input and reads more; false at the end of the file (or an error).
  bool FillInput() {
    in_base_ += in_pos_;
    in_.erase(0, in_pos_);
    in_pos_ = 0;
    const size_t old = in_.size();
    in_.resize(old + kReadChunk);
    const size_t n = std::fread(in_.data() + old, 1, kReadChunk, f_);
    in_.resize(old + n);
    if (n == 0 && std::ferror(f_)) status_ = IoError("crawl " + path_ + ": read: " + std::strerror(errno));
    return n > 0;
  }

  void ResetInflate() {
    isal_inflate_init(&z_);
    z_.crc_flag = ISAL_GZIP;  // a gzip header and trailer around each member, its CRC checked
  }

  static std::string InflateError(int rc) {
    switch (rc) {
      case ISAL_INVALID_BLOCK: return "invalid deflate block";
      case ISAL_INVALID_SYMBOL: return "invalid deflate symbol";
      case ISAL_INVALID_LOOKBACK: return "invalid distance too far back";
      case ISAL_INVALID_WRAPPER: return "incorrect header check";
      case ISAL_UNSUPPORTED_METHOD: return "unknown compression method";
      case ISAL_INCORRECT_CHECKSUM: return "incorrect data check";
      case ISAL_NEED_DICT: return "needs a preset dictionary";
      default: return "invalid data (" + std::to_string(rc) + ")";
    }
  }

  void SkipZeros() {
    for (;;) {
      while (in_pos_ < in_.size() && in_[in_pos_] == '\0') ++in_pos_;
      if (in_pos_ < in_.size() || !FillInput()) return;
    }
  }

  // Moves the input to the next "1f 8b 08" after the current position; false if there is none.
  bool SeekNextMember() {
    for (;;) {
      while (in_.size() - in_pos_ >= 3) {
        if (static_cast<unsigned char>(in_[in_pos_]) == 0x1f && static_cast<unsigned char>(in_[in_pos_ + 1]) == 0x8b &&
            in_[in_pos_ + 2] == 8) {
          return true;
        }
        ++in_pos_;
      }
      // The last bytes stay (a header may straddle two chunks).
      if (!FillInput()) {
        in_pos_ = in_.size();
        return false;
      }
    }
  }

  std::FILE* f_;
  std::string path_;
  inflate_state z_;
  std::string in_;
  size_t in_pos_ = 0;
  uint64_t in_base_ = 0;  // file offset of in_[0]
  uint64_t stream_ = 0;   // decompressed bytes made
  uint64_t last_end_ = 0;
  std::deque<Member> members_;
  std::deque<Gap> breaks_;
};

// ---- HTTP bodies --------------------------------------------------------------------------------

// De-chunks a Transfer-Encoding: chunked body; false if it is malformed.
bool Dechunk(std::string_view in, std::string* out) {
  out->clear();
  size_t at = 0;
  for (;;) {
    const size_t eol = in.find("\r\n", at);
    if (eol == std::string_view::npos) return false;
    std::string_view size_line = in.substr(at, eol - at);
    size_line = size_line.substr(0, size_line.find(';'));
    size_line = Trim(size_line);
    if (size_line.empty() || size_line.size() > 15) return false;
    uint64_t n = 0;
    for (char c : size_line) {
      const int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                    : (c >= 'a' && c <= 'f')                     ? c - 'a' + 10
                    : (c >= 'A' && c <= 'F')                     ? c - 'A' + 10
                                                                 : -1;
      if (d < 0) return false;
      n = n * 16 + static_cast<uint64_t>(d);
    }
    at = eol + 2;
    if (n == 0) return true;  // trailers, if any, are ignored
    if (at + n > in.size()) return false;
    out->append(in.substr(at, n));
    at += n;
    if (in.substr(at, 2) != "\r\n") return false;
    at += 2;
  }
}

// Inflates a gzip or zlib/deflate Content-Encoding; false if it does not inflate or would exceed
// `limit` bytes.
bool Inflate(std::string_view in, bool gzip, uint64_t limit, std::string* out) {
  auto attempt = [&](int window_bits) {
    z_stream z;
    std::memset(&z, 0, sizeof z);
    if (inflateInit2(&z, window_bits) != Z_OK) return false;
    out->clear();
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    int rc = Z_OK;
    char buf[kReadChunk];
    while (rc == Z_OK) {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = sizeof buf;
      rc = inflate(&z, Z_NO_FLUSH);
      out->append(buf, sizeof buf - z.avail_out);
      if (out->size() > limit) rc = Z_MEM_ERROR;
      if (rc == Z_BUF_ERROR && z.avail_in == 0) break;
    }
    inflateEnd(&z);
    return rc == Z_STREAM_END;
  };
  if (gzip) return attempt(15 + 16);
  return attempt(15) || attempt(-15);  // "deflate" is zlib-wrapped by the RFC, raw by some servers
}

// Latin-1 (and its windows-1252 and ASCII relatives, as browsers treat them) to UTF-8.
void Latin1ToUtf8(std::string_view in, std::string* out) {
  out->clear();
  out->reserve(in.size() + in.size() / 8);
  for (char ch : in) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x80) {
      out->push_back(ch);
    } else {
      out->push_back(static_cast<char>(0xC0 | (c >> 6)));
      out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
}

bool ValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    if (DecodeUtf8(s, &i) == kInvalidCodePoint) return false;
  }
  return true;
}

// The media type (lower case, no parameters) and charset (lower case, "" if none) of a
// Content-Type value.
void MediaType(std::string_view v, std::string* type, std::string* charset) {
  const size_t semi = v.find(';');
  *type = Lower(Trim(v.substr(0, semi)));
  charset->clear();
  if (semi == std::string_view::npos) return;
  const std::string params = Lower(v.substr(semi + 1));
  const size_t at = params.find("charset=");
  if (at == std::string::npos) return;
  std::string_view cs = std::string_view(params).substr(at + 8);
  cs = cs.substr(0, cs.find(';'));
  cs = Trim(cs);
  if (cs.size() >= 2 && (cs.front() == '"' || cs.front() == '\'')) cs = cs.substr(1, cs.size() - 2);
  *charset = std::string(cs);
}

// ---- The reader ---------------------------------------------------------------------------------

class WarcReader final : public CrawlReader {
 public:
  WarcReader(std::unique_ptr<Source> src, std::optional<uint64_t> size, CrawlReaderOptions options)
      : CrawlReader(options.quiet_bad_lines, "WARC record"), src_(std::move(src)), size_(size),
        options_(std::move(options)) {
    stats_.warc = true;
  }

  bool Next(CrawlRecord* record) override;
  const Status& status() const override { return src_->status(); }
  std::optional<uint64_t> total_bytes() const override { return size_; }

 private:
  // Makes buf_ hold at least `n` bytes from pos_ on; false at the end of the stream before that.
  bool Ensure(size_t n) {
    while (buf_.size() - pos_ < n) {
      if (src_->Read(&buf_) == 0) return false;
    }
    return true;
  }
  uint64_t Offset() const { return base_ + pos_; }
  // Drops the bytes before pos_ from buf_.
  void Compact() {
    base_ += pos_;
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  // Moves pos_ to the next "WARC/1." at a line's start at or after stream offset `from`; false at
  // the end of the stream.
  bool Resync(uint64_t from);
  // Discards `n` bytes from pos_ on without holding them; false if the stream ends first.
  bool Discard(uint64_t n);
  void Bad(uint64_t record_no, uint64_t at, const std::string& what) {
    Report(record_no, "record at " + src_->Where(at) + ": " + what);
  }
  // Turns a response's block into *record; false (with *why empty: skipped and counted; else:
  // bad) when it yields none.
  bool FromResponse(std::string_view block, const std::string& url, CrawlRecord* record, std::string* why);

  // Next's steps, one record at a time. kSkip: go on with the next record (the reader may have
  // ended: a bad record's resync found no other), kEnd: the reader ended.
  enum class Step { kRecord, kSkip, kEnd };
  // The record being read: its number and stream offset, and its WARC header's fields.
  struct Head {
    uint64_t no = 0, start = 0;
    size_t head_end = 0;  // buf_ index of the CRLF CRLF that ends the header
    uint64_t length = 0;  // Content-Length
    std::string type;     // WARC-Type, lower case
    std::string url;      // WARC-Target-URI, without <>
    std::string named;    // " (url)" for the messages, or empty
    std::optional<int64_t> date;
  };
  // Skips the blank lines before a record (the block's CRLF CRLF is consumed with it; more are
  // tolerated); false, ending the reader, at the end of the stream.
  bool SkipBlankLines();
  // Resyncs at the next record from `from`; ends the reader when there is none.
  void SkipTo(uint64_t from) {
    if (!Resync(from)) ended_ = true;
  }
  // Reads and parses the header of the record at pos_ into *h; a bad one is reported.
  Step ReadHead(Head* h);
  // Reads the block after the header: *body views it in buf_, *end_offset is the file offset
  // past the record, and pos_ is past its trailer. A block over max_line_bytes is passed over.
  Step ReadBlock(const Head& h, std::string_view* body, uint64_t* end_offset);
  // A response with an absolute http(s) URL that options_.want_url wants becomes *record (kRecord);
  // other types, revisits and unwanted URLs are counted, bad responses reported (kSkip).
  Step Deliver(Head* h, std::string_view body, uint64_t end_offset, CrawlRecord* record);

  std::unique_ptr<Source> src_;
  std::optional<uint64_t> size_;
  CrawlReaderOptions options_;
  std::string buf_;
  size_t pos_ = 0;
  uint64_t base_ = 0;  // stream offset of buf_[0]
  bool ended_ = false;
  std::string scratch_, scratch2_;
};

bool WarcReader::Resync(uint64_t from) {
  if (from > Offset()) {
    if (!Discard(from - Offset())) return false;
  }
  constexpr std::string_view kMagic = "WARC/1.";
  for (;;) {
    const size_t hit = buf_.find(kMagic, pos_);
    if (hit != std::string::npos) {
      if ((hit == 0 && base_ == 0) || (hit > 0 && buf_[hit - 1] == '\n')) {
        pos_ = hit;
        return true;
      }
      pos_ = hit + 1;
      continue;
    }
    pos_ = std::max(pos_, buf_.size() >= kMagic.size() ? buf_.size() - kMagic.size() : size_t{0});
    Compact();
    if (src_->Read(&buf_) == 0) return false;
  }
}

bool WarcReader::Discard(uint64_t n) {
  for (;;) {
    const uint64_t here = buf_.size() - pos_;
    if (here >= n) {
      pos_ += n;
      return true;
    }
    n -= here;
    pos_ = buf_.size();
    Compact();
    if (src_->Read(&buf_) == 0) return false;
  }
}

bool WarcReader::Next(CrawlRecord* record) {
  while (!ended_ && src_->status().ok()) {
    if (pos_ > (1u << 20)) Compact();
    if (!SkipBlankLines()) return false;
    Head h;
    h.start = Offset();
    h.no = ++stats_.lines;
    stats_.bytes = src_->consumed();
    uint64_t at;
    std::string why;
    // A gzip member skipped before this record (the record itself starts a good one).
    while (src_->TakeBreak(h.start, &at, &why)) Bad(h.no, at, "corrupt: " + why);
    Step step = ReadHead(&h);
    if (step == Step::kEnd) return false;
    if (step == Step::kSkip) continue;
    std::string_view body;
    uint64_t end_offset = 0;
    step = ReadBlock(h, &body, &end_offset);
    if (step == Step::kEnd) return false;
    if (step == Step::kSkip) continue;
    if (Deliver(&h, body, end_offset, record) == Step::kRecord) return true;
  }
  return false;
}

bool WarcReader::SkipBlankLines() {
  for (;;) {
    if (!Ensure(1)) {
      // A last gzip member that did not inflate, with nothing after it.
      uint64_t at;
      std::string why;
      while (src_->TakeBreak(UINT64_MAX, &at, &why)) Bad(stats_.lines + 1, at, "corrupt: " + why);
      ended_ = true;
      return false;
    }
    if (buf_[pos_] != '\r' && buf_[pos_] != '\n') return true;
    ++pos_;
  }
}

WarcReader::Step WarcReader::ReadHead(Head* h) {
  const uint64_t no = h->no, start = h->start;
  size_t head_end;
  for (;;) {
    head_end = buf_.find("\r\n\r\n", pos_);
    if (head_end != std::string::npos || buf_.size() - pos_ > kMaxHeaderBytes) break;
    if (src_->Read(&buf_) == 0) break;
  }
  if (buf_.compare(pos_, 5, "WARC/") != 0) {
    Bad(no, start, "corrupt: no WARC/ version line where a record should start");
    SkipTo(start + 1);
    return Step::kSkip;
  }
  if (head_end == std::string::npos || head_end - pos_ > kMaxHeaderBytes) {
    if (buf_.size() - pos_ <= kMaxHeaderBytes) {
      Bad(no, start, "truncated: the file ends inside the record's header");
      ended_ = true;
      return Step::kEnd;
    }
    Bad(no, start, "corrupt: header longer than " + std::to_string(kMaxHeaderBytes) + " bytes");
    SkipTo(start + 1);
    return Step::kSkip;
  }
  Headers hs;
  std::string_view version;
  const bool parsed = ParseHeaderLines(std::string_view(buf_).substr(pos_, head_end - pos_), &version, &hs);
  const std::string* cl = hs.Get("content-length");
  if (!parsed || cl == nullptr || !ParseUint(*cl, &h->length)) {
    Bad(no, start, !parsed ? "corrupt: a header line without ':'"
                   : cl == nullptr ? "corrupt: no Content-Length"
                                   : "corrupt: Content-Length is not a number: '" + *cl + "'");
    SkipTo(start + 1);
    return Step::kSkip;
  }
  h->head_end = head_end;
  h->type = hs.Get("warc-type") != nullptr ? Lower(*hs.Get("warc-type")) : "";
  h->url = hs.Get("warc-target-uri") != nullptr ? *hs.Get("warc-target-uri") : "";
  if (h->url.size() >= 2 && h->url.front() == '<' && h->url.back() == '>') h->url = h->url.substr(1, h->url.size() - 2);
  if (const std::string* d = hs.Get("warc-date")) h->date = ParseRfc3339(*d);
  h->named = h->url.empty() ? "" : " (" + h->url + ")";
  return Step::kRecord;
}

WarcReader::Step WarcReader::ReadBlock(const Head& h, std::string_view* body, uint64_t* end_offset) {
  const uint64_t no = h.no, start = h.start, length = h.length;
  const std::string& named = h.named;
  const uint64_t block = start + (h.head_end + 4 - pos_);
  if (length > options_.max_line_bytes) {
    pos_ = h.head_end + 4;
    if (!Discard(length)) {
      Bad(no, start, "truncated: Content-Length " + std::to_string(length) + " but the file ends first" + named);
      ended_ = true;
      return Step::kEnd;
    }
    Bad(no, start, "block of " + std::to_string(length) + " bytes longer than max_line_bytes (" +
                       std::to_string(options_.max_line_bytes) + ")" + named);
    return Step::kSkip;
  }
  uint64_t at;
  std::string why;
  const size_t in_buf = h.head_end + 4;
  if (!Ensure(in_buf - pos_ + length + 4)) {
    // Room for the trailer may be missing at the very end (a writer that drops it).
    if (buf_.size() < in_buf + length) {
      if (src_->TakeBreak(base_ + buf_.size(), &at, &why)) {
        Bad(no, start, "corrupt: " + why + named);
        SkipTo(at);
        return Step::kSkip;
      }
      Bad(no, start, "truncated: Content-Length " + std::to_string(length) + " but the file ends " +
                         std::to_string(buf_.size() - in_buf) + " bytes into the block" + named);
      ended_ = true;
      return Step::kEnd;
    }
  }
  const uint64_t end = block + length;
  if (src_->TakeBreak(end - 1, &at, &why)) {
    Bad(no, start, "corrupt: " + why + named);
    SkipTo(at);
    return Step::kSkip;
  }
  std::string_view trailer = std::string_view(buf_).substr(in_buf + length, 4);
  if (trailer != "\r\n\r\n" && !(trailer.size() < 4 && std::string_view("\r\n\r\n").starts_with(trailer))) {
    Bad(no, start, "corrupt: the block is not followed by CRLF CRLF (a wrong Content-Length?)" + named);
    SkipTo(start + 1);
    return Step::kSkip;
  }
  pos_ = in_buf + length + trailer.size();
  // Have the stream past this record, so that a gzip member ending with it is known to end
  // (buf_ may move: the block is viewed after).
  (void)Ensure(1);
  *body = std::string_view(buf_).substr(in_buf, length);
  *end_offset = src_->FileOffsetAt(Offset());
  stats_.bytes = src_->consumed();
  return Step::kRecord;
}

WarcReader::Step WarcReader::Deliver(Head* h, std::string_view body, uint64_t end_offset, CrawlRecord* record) {
  if (h->type == "revisit") {
    ++stats_.warc_revisits;
    return Step::kSkip;
  }
  if (h->type != "response") {
    ++stats_.warc_not_response;
    return Step::kSkip;
  }
  if (!IsAbsoluteHttpUrl(h->url)) {
    Bad(h->no, h->start, "response without an absolute http(s) WARC-Target-URI: '" + h->url + "'");
    return Step::kSkip;
  }
  if (options_.want_url && !options_.want_url(h->url)) {
    ++stats_.passed_over;
    return Step::kSkip;
  }
  std::string problem;
  if (!FromResponse(body, h->url, record, &problem)) {
    if (!problem.empty()) Bad(h->no, h->start, problem + h->named);
    return Step::kSkip;
  }
  record->url = std::move(h->url);
  record->fetched_at_ms = h->date;
  record->popularity = 0;
  record->market.clear();
  record->line = h->no;
  record->end_offset = end_offset;
  ++stats_.records;
  return Step::kRecord;
}

bool WarcReader::FromResponse(std::string_view block, const std::string& url, CrawlRecord* record, std::string* why) {
  size_t head_end = block.find("\r\n\r\n");
  size_t body_at = head_end + 4;
  if (head_end == std::string_view::npos) {
    head_end = block.find("\n\n");
    body_at = head_end + 2;
  }
  if (head_end == std::string_view::npos) {
    if (!block.starts_with("HTTP/")) {
      *why = "corrupt: the response block is not an HTTP response";
      return false;
    }
    head_end = block.size();  // a head alone (a redirect, an error) is fine
    body_at = block.size();
  }
  Headers h;
  std::string_view status_line;
  if (!block.starts_with("HTTP/") || !ParseHeaderLines(block.substr(0, head_end), &status_line, &h)) {
    *why = "corrupt: the response block is not an HTTP response";
    return false;
  }
  const size_t sp = status_line.find(' ');
  uint64_t status = 0;
  if (sp == std::string_view::npos || !ParseUint(status_line.substr(sp + 1, 3), &status) || status < 100 ||
      status > 999) {
    *why = "corrupt: bad HTTP status line '" + std::string(status_line.substr(0, 80)) + "'";
    return false;
  }
  record->body.clear();
  record->redirect_to.clear();
  record->gone = false;
  record->is_html = false;
  if (status == 404 || status == 410) {
    record->gone = true;
    return true;
  }
  if (status >= 300 && status < 400) {
    const std::string* loc = h.Get("location");
    std::string target = loc != nullptr ? ResolveUrl(url, *loc) : "";
    if (target.empty() || !IsAbsoluteHttpUrl(target)) {
      ++stats_.warc_other_status;
      return false;
    }
    record->redirect_to = std::move(target);
    return true;
  }
  if (status < 200 || status >= 300) {
    ++stats_.warc_other_status;
    return false;
  }
  std::string type, charset;
  if (const std::string* ct = h.Get("content-type")) MediaType(*ct, &type, &charset);
  if (!type.empty() && type != "text/html" && type != "application/xhtml+xml") {
    ++stats_.warc_non_html;
    return false;
  }
  std::string_view body = block.substr(std::min(body_at, block.size()));
  if (const std::string* te = h.Get("transfer-encoding"); te != nullptr && Lower(*te).find("chunked") != std::string::npos) {
    if (!Dechunk(body, &scratch_)) {
      *why = "corrupt: malformed chunked body";
      return false;
    }
    body = scratch_;
  }
  if (const std::string* ce = h.Get("content-encoding")) {
    const std::string enc = Lower(Trim(*ce));
    if (enc == "gzip" || enc == "x-gzip" || enc == "deflate") {
      if (!Inflate(body, enc != "deflate", options_.max_line_bytes, &scratch2_)) {
        *why = "corrupt: Content-Encoding " + enc + " body does not inflate (or inflates past max_line_bytes)";
        return false;
      }
      body = scratch2_;
    } else if (!enc.empty() && enc != "identity") {
      *why = "unsupported Content-Encoding '" + enc + "'";
      return false;
    }
  }
  if (charset == "iso-8859-1" || charset == "latin1" || charset == "latin-1" || charset == "windows-1252" ||
      charset == "cp1252") {
    Latin1ToUtf8(body, &record->body);
  } else if (ValidUtf8(body)) {
    record->body.assign(body);
  } else {
    record->body.clear();
    AppendRepairedUtf8(body, &record->body);
    ++stats_.utf8_repaired;
  }
  record->is_html = true;
  return true;
}

// RFC 3986 5.2.4.
std::string RemoveDotSegments(std::string_view in) {
  std::string out;
  while (!in.empty()) {
    if (in.starts_with("../")) in.remove_prefix(3);
    else if (in.starts_with("./")) in.remove_prefix(2);
    else if (in.starts_with("/./")) in.remove_prefix(2);
    else if (in == "/.") in = "/";
    else if (in.starts_with("/../") || in == "/..") {
      in = in.size() == 3 ? std::string_view("/") : in.substr(3);
      const size_t slash = out.rfind('/');
      out.resize(slash == std::string::npos ? 0 : slash);
    } else if (in == "." || in == "..") {
      in = {};
    } else {
      const size_t next = in.find('/', in.front() == '/' ? 1 : 0);
      out.append(in.substr(0, next));
      in = next == std::string_view::npos ? std::string_view() : in.substr(next);
    }
  }
  return out;
}

struct UrlParts {
  std::string_view scheme, authority, path, query;  // query with its '?', if any
};

UrlParts Split(std::string_view u) {
  UrlParts p;
  u = u.substr(0, u.find('#'));
  const size_t colon = u.find(':');
  const size_t first_delim = u.find_first_of("/?");
  if (colon != std::string_view::npos && colon > 0 && colon < first_delim) {
    p.scheme = u.substr(0, colon);
    u.remove_prefix(colon + 1);
  }
  if (u.starts_with("//")) {
    u.remove_prefix(2);
    const size_t end = u.find_first_of("/?");
    p.authority = u.substr(0, end);
    u = end == std::string_view::npos ? std::string_view() : u.substr(end);
  }
  const size_t q = u.find('?');
  p.path = u.substr(0, q);
  if (q != std::string_view::npos) p.query = u.substr(q);
  return p;
}

}  // namespace

std::string ResolveUrl(std::string_view base, std::string_view ref) {
  ref = Trim(ref);
  const UrlParts b = Split(base);
  const UrlParts r = Split(ref);
  std::string scheme(b.scheme), authority(b.authority), path, query;
  bool has_authority = !b.authority.empty() || base.substr(b.scheme.size()).starts_with("://");
  if (!r.scheme.empty()) {
    scheme = std::string(r.scheme);
    authority = std::string(r.authority);
    has_authority = ref.substr(r.scheme.size()).starts_with("://");
    path = RemoveDotSegments(r.path);
    query = std::string(r.query);
  } else if (ref.starts_with("//")) {
    authority = std::string(r.authority);
    has_authority = true;
    path = RemoveDotSegments(r.path);
    query = std::string(r.query);
  } else if (r.path.empty()) {
    path = std::string(b.path);
    query = std::string(r.query.empty() ? b.query : r.query);
  } else {
    if (r.path.front() == '/') {
      path = RemoveDotSegments(r.path);
    } else {
      std::string merged;
      if (has_authority && b.path.empty()) {
        merged = "/" + std::string(r.path);
      } else {
        const size_t slash = b.path.rfind('/');
        merged = std::string(slash == std::string_view::npos ? std::string_view() : b.path.substr(0, slash + 1));
        merged += r.path;
      }
      path = RemoveDotSegments(merged);
    }
    query = std::string(r.query);
  }
  std::string out = scheme + ":";
  if (has_authority) out += "//" + authority;
  if (has_authority && path.empty()) path = "/";
  return out + path + query;
}

StatusOr<std::unique_ptr<CrawlReader>> OpenWarcReader(const std::string& path, CrawlReaderOptions options) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return IoError("crawl " + path + ": " + std::strerror(errno));
  std::optional<uint64_t> size;
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode)) size = static_cast<uint64_t>(st.st_size);
  std::unique_ptr<Source> src;
  if (path.ends_with(".gz")) src = std::make_unique<GzipSource>(f, path);
  else src = std::make_unique<PlainSource>(f, path);
  if (!src->status().ok()) return src->status();
  return std::unique_ptr<CrawlReader>(new WarcReader(std::move(src), size, std::move(options)));
}

}  // namespace neardup
