// LineReader: a stream's lines, one at a time, in constant memory: the reading half of every
// JSON Lines input (crawl records, email records). Each line comes without its newline, with
// `padding` readable bytes allocated after it (a parser such as simdjson reads past a document's
// end): in place in the read buffer when the line lies whole in it, else copied. A line longer
// than max_line_bytes is never held in memory: it streams past and is reported too long.
//
//   ASSIGN_OR_RETURN(auto lines, LineReader::Open("crawl.jsonl", {.max_line_bytes = 1 << 20}, "crawl"));
//   std::string_view line;  bool too_long;
//   while (lines->Next(&line, &too_long)) { ... lines->line_number() ... }
//   RETURN_IF_ERROR(lines->status());   // I/O errors only
//
// Thread safety: used by one thread at a time.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace neardup {

struct LineReaderOptions {
  uint64_t max_line_bytes = uint64_t{8} << 20;
  // Readable bytes allocated past the end of each line handed out (their content is unspecified).
  size_t padding = 0;
  // Follows a growing file: when set, the reader reads no further than the first readable()
  // bytes, which must end at a line's end, and asks again when it gets there; with nothing more
  // readable, Next() returns false with paused() true, and may be called again later.
  std::function<uint64_t()> readable;
  // Tells the kernel, every 64 MiB read, that the file's pages read more than 64 MiB ago are not
  // needed again (posix_fadvise DONTNEED): for a long input read once, whose pages would otherwise
  // push the store's hot pages out of the page cache. Only for a regular file.
  bool drop_read_pages = false;
};

class LineReader {
 public:
  // Opens `path` ("-" for standard input). IoError naming `what` and the path if it cannot.
  static StatusOr<std::unique_ptr<LineReader>> Open(const std::string& path, LineReaderOptions options,
                                                    const std::string& what);
  // Reads an already open stream, which the reader does not close.
  static std::unique_ptr<LineReader> FromStream(std::FILE* stream, LineReaderOptions options);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line into *line (valid until the next call) and true; *too_long when it passed
  // max_line_bytes (*line is then empty). False at the end of the input, on an I/O error
  // (status() says which), or when a followed file has nothing more readable yet (paused()).
  bool Next(std::string_view* line, bool* too_long);
  bool paused() const { return paused_; }
  // 1-based number of the line Next() returned last.
  uint64_t line_number() const { return lines_; }
  // Bytes consumed, up to and including the last line's newline.
  uint64_t bytes() const { return bytes_; }
  // The input's size when known (a regular file), for progress and ETA.
  std::optional<uint64_t> total_bytes() const { return total_bytes_; }
  const Status& status() const { return status_; }

 private:
  LineReader(std::FILE* f, bool owned, LineReaderOptions options);

  std::FILE* file_;
  bool owned_;
  LineReaderOptions options_;
  std::unique_ptr<char[]> buf_;
  size_t buf_pos_ = 0, buf_len_ = 0;
  bool eof_ = false;
  bool paused_ = false;
  uint64_t read_pos_ = 0;  // bytes read from the file into buf_
  uint64_t dropped_to_ = 0;  // options_.drop_read_pages: advised up to here
  uint64_t bytes_ = 0;
  uint64_t lines_ = 0;
  std::string line_;
  std::optional<uint64_t> total_bytes_;
  Status status_;
};

}  // namespace neardup
