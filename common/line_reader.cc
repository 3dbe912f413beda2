#include "common/line_reader.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace neardup {
namespace {

constexpr size_t kReadBuffer = 1 << 20;
constexpr uint64_t kDropEvery = uint64_t{64} << 20;
// Pages within this many bytes behind the read position stay: the reader's caller may not have
// taken in its last lines yet (the pipeline hashes the input up to each batch's end through a
// descriptor of its own, rounds of records behind the reader), and dropping them would make that
// read go to the disk.
constexpr uint64_t kDropLag = uint64_t{64} << 20;

}  // namespace

LineReader::LineReader(std::FILE* f, bool owned, LineReaderOptions options)
    : file_(f), owned_(owned), options_(std::move(options)), buf_(new char[kReadBuffer + options_.padding]) {
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode)) total_bytes_ = static_cast<uint64_t>(st.st_size);
}

LineReader::~LineReader() {
  if (owned_ && file_ != nullptr) std::fclose(file_);
}

StatusOr<std::unique_ptr<LineReader>> LineReader::Open(const std::string& path, LineReaderOptions options,
                                                       const std::string& what) {
  if (path == "-") return FromStream(stdin, std::move(options));
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return IoError("cannot open " + what + " " + path + ": " + std::strerror(errno));
  return std::unique_ptr<LineReader>(new LineReader(f, true, std::move(options)));
}

std::unique_ptr<LineReader> LineReader::FromStream(std::FILE* stream, LineReaderOptions options) {
  return std::unique_ptr<LineReader>(new LineReader(stream, false, std::move(options)));
}

bool LineReader::Next(std::string_view* line, bool* too_long) {
  *line = {};
  *too_long = false;
  paused_ = false;
  if (!status_.ok()) return false;
  line_.clear();
  // The common case: the whole line is in the buffer, handed out where it lies (buf_ has the
  // padding beyond kReadBuffer).
  if (buf_pos_ < buf_len_) {
    const char* start = buf_.get() + buf_pos_;
    const size_t avail = buf_len_ - buf_pos_;
    if (const void* nl = std::memchr(start, '\n', avail)) {
      const size_t take = static_cast<size_t>(static_cast<const char*>(nl) - start);
      bytes_ += take + 1;
      buf_pos_ += take + 1;
      ++lines_;
      if (take > options_.max_line_bytes) *too_long = true;
      else *line = std::string_view(start, take);
      return true;
    }
  }
  bool any = false;
  for (;;) {
    if (buf_pos_ == buf_len_) {
      if (eof_) break;
      size_t want = kReadBuffer;
      if (options_.readable) {
        const uint64_t limit = options_.readable();
        if (limit <= read_pos_) {
          paused_ = true;
          break;
        }
        want = static_cast<size_t>(std::min<uint64_t>(want, limit - read_pos_));
        std::clearerr(file_);  // an end of file seen before is not the end of a growing file
      }
      buf_len_ = std::fread(buf_.get(), 1, want, file_);
      buf_pos_ = 0;
      read_pos_ += buf_len_;
      if (options_.drop_read_pages && total_bytes_ && read_pos_ >= dropped_to_ + kDropEvery + kDropLag) {
        // Everything read is in buf_ or handed out already. The stream's own buffer may hold a
        // little past read_pos_; what the kernel drops is read again if needed, never lost.
        dropped_to_ = read_pos_ - kDropLag;
        (void)::posix_fadvise(fileno(file_), 0, static_cast<off_t>(dropped_to_), POSIX_FADV_DONTNEED);
      }
      if (buf_len_ == 0) {
        if (std::ferror(file_)) status_ = IoError(std::string("read error: ") + std::strerror(errno));
        eof_ = true;
        break;
      }
    }
    any = true;
    const char* start = buf_.get() + buf_pos_;
    const size_t avail = buf_len_ - buf_pos_;
    const void* nl = std::memchr(start, '\n', avail);
    const size_t take = nl ? static_cast<size_t>(static_cast<const char*>(nl) - start) : avail;
    bytes_ += take + (nl ? 1 : 0);
    if (!*too_long) {
      if (line_.size() + take > options_.max_line_bytes) {
        *too_long = true;
        line_.clear();
        line_.shrink_to_fit();
      } else {
        line_.append(start, take);
      }
    }
    buf_pos_ += take + (nl ? 1 : 0);
    if (nl) break;
  }
  if (!any) return false;
  ++lines_;
  if (!*too_long) {
    line_.reserve(line_.size() + options_.padding);
    *line = line_;
  }
  return true;
}

}  // namespace neardup
