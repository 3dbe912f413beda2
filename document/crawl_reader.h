// CrawlReader: streams crawl records from a file in constant memory, whatever its format:
// JSON Lines (below), or WARC as crawlers write it (a path ending in .warc or .warc.gz:
// document/warc_reader.h). CrawlReader::Open picks the format by the path; callers see the same
// records, statistics and bad-record reports either way.
//
// JSON Lines: one JSON object per line:
//   url          required; absolute http:// or https:// URL
//   html | text  one of them required unless redirect_to or gone is given. With both, html is
//                used and text ignored (html is the fetched page; text may be a lossy extract).
//   redirect_to  optional URL: this URL redirects there (content, if any, is ignored)
//   gone         optional boolean (true or false, default false): true when the crawler got 404
//                or 410 for the URL: the page no longer exists (content and redirect_to, if
//                any, are ignored). false is the same as absent.
//   popularity   optional number >= 0 (default 0)
//   fetched_at   optional RFC 3339 time, e.g. "2024-06-03T00:09:48Z" or "...+02:00"
//   market       optional string, e.g. "uk"
// Unknown fields are ignored. Empty lines are skipped silently.
//
// A bad line (not JSON, a missing or mistyped field, a line longer than max_line_bytes) is
// reported through the error callback with its 1-based line number and the reason, counted, and
// skipped; reading goes on. A line that is valid JSON except for invalid UTF-8 is repaired
// (invalid bytes become U+FFFD), counted in stats().utf8_repaired and kept. A line over the
// limit is never held in memory: it is skipped as it streams past.
//
//   ASSIGN_OR_RETURN(auto reader, CrawlReader::Open("crawl.jsonl", {}));
//   CrawlRecord r;
//   while (reader->Next(&r)) Use(r);
//   RETURN_IF_ERROR(reader->status());   // I/O errors only; bad lines are not errors
//
// Thread safety: a CrawlReader is used by one thread at a time.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/config.h"
#include "common/line_reader.h"
#include "common/status.h"

namespace neardup {

struct CrawlRecord {
  std::string url;
  std::string body;        // the html or text content (empty for a redirect or a gone page)
  bool is_html = false;    // body is HTML (true) or plain text (false)
  std::string redirect_to; // empty when the page does not redirect (always for a gone page)
  bool gone = false;       // the URL answered 404/410: no content, no redirect
  double popularity = 0;
  std::optional<int64_t> fetched_at_ms;  // milliseconds since the Unix epoch, UTC
  std::string market;
  uint64_t line = 0;       // 1-based line number in the input (WARC: 1-based record number)
  // Bytes of the input up to and including this record's line (WARC: up to the end of the record;
  // in a .warc.gz, up to the end of the last gzip member that ended within the record).
  uint64_t end_offset = 0;

  bool is_redirect() const { return !redirect_to.empty(); }
  // A content record (html or text, possibly without words): neither a redirect nor gone.
  bool has_content() const { return !gone && redirect_to.empty(); }
};

struct CrawlReaderOptions {
  uint64_t max_line_bytes = ConfigDefaults().reader().max_line_bytes();
  // When set, a record whose "url" fails it is passed over after reading only its URL: it is not
  // parsed further nor validated, and is counted in stats().passed_over, not in records or
  // bad_lines. For sampling a large crawl by URL (most records are not wanted). A line whose URL
  // cannot be read that way is parsed in full as usual (and reported if bad).
  std::function<bool(std::string_view url)> want_url;
  // Bad lines are counted but not logged: for a second pass over an input whose bad lines another
  // pass reports (the pipeline's map sample, before the run itself reads every line).
  bool quiet_bad_lines = false;
  // Follows a growing file (a Tier 1 server's ingest log): when set, the reader reads no further
  // than the first readable() bytes, which must end at a line's end, and asks again when it gets
  // there; with nothing more readable, Next() returns false with paused() true, and may be called
  // again later. Without it the reader reads to the end of the file.
  std::function<uint64_t()> readable;
  // LineReaderOptions::drop_read_pages (JSON Lines input): the pipeline's one pass over a crawl.
  bool drop_read_pages = false;
};

struct CrawlReaderStats {
  uint64_t lines = 0;          // lines seen, including empty and bad ones
  uint64_t records = 0;        // records returned by Next()
  uint64_t bad_lines = 0;      // lines reported and skipped
  uint64_t utf8_repaired = 0;  // records kept after replacing invalid UTF-8
  uint64_t bytes = 0;          // bytes consumed
  uint64_t passed_over = 0;    // records whose URL CrawlReaderOptions::want_url refused
  // WARC input only (document/warc_reader.h). `lines` counts WARC records there, `bad_lines` the
  // truncated or corrupt ones, `bytes` the bytes of the file consumed (compressed, for .warc.gz).
  bool warc = false;
  uint64_t warc_revisits = 0;  // revisit records skipped (the crawler kept no new content)
  uint64_t warc_non_html = 0;  // responses skipped whose content is not HTML (or text)
  uint64_t warc_other_status = 0;  // responses skipped: an HTTP status that is none of 2xx, 3xx
                                   // with a Location, 404, 410
  uint64_t warc_not_response = 0;  // warcinfo, request, metadata, ... records (not pages)
};

// A line (JSON Lines) or a record (WARC) that was reported and skipped.
struct BadLine {
  uint64_t line;         // 1-based line number; WARC: 1-based record number
  std::string reason;    // WARC: starts with "record at byte N"
};

// Parses one line into *out (line number untouched). Returns InvalidArgument naming the field and
// the problem. Invalid UTF-8 is repaired as in CrawlReader.
Status ParseCrawlRecord(std::string_view line, CrawlRecord* out);

// The record as one JSON Lines line (without its newline) that ParseCrawlRecord reads back as
// the same record: url; html or text (the body, by is_html); redirect_to; gone; popularity (as
// many digits as it takes); fetched_at (UTC, milliseconds when not whole seconds); market. Fields
// at their defaults are left out. How a WARC crawl goes to a server that takes JSON Lines.
std::string FormatJsonLine(const CrawlRecord& r);

// True when `path` names a WARC file (ends in .warc or .warc.gz).
bool IsWarcPath(std::string_view path);

// True for an absolute http(s) URL with a non-empty host and no whitespace or control characters.
bool IsAbsoluteHttpUrl(std::string_view url);

// "12000 records from 12004 lines, 3 bad lines skipped, 1 repaired (invalid UTF-8)" (and ", N
// passed over by URL" when some were; for WARC input, the records skipped by kind).
std::string SummarizeReader(const CrawlReaderStats& stats);

// About how many records the crawl at `path` holds: the records (and lines passed over) in its
// first `probe_bytes`, scaled by the file's size; exact when the file ends within them. Records
// are only counted (each passed over after its URL), so a probe costs a few milliseconds. For
// sizing what grows with the crawl before reading it (the group store's memtable). Errors: as
// Open, and the reader's I/O error.
StatusOr<uint64_t> EstimateRecordCount(const std::string& path, CrawlReaderOptions options,
                                       uint64_t probe_bytes = 4ull << 20);

class CrawlReader {
 public:
  // Opens `path` ("-" for standard input, read as JSON Lines): WARC when the path ends in .warc or
  // .warc.gz (document/warc_reader.h; `readable` is not supported there), JSON Lines otherwise.
  // IoError if it cannot be opened; InvalidArgument for following a WARC input.
  static StatusOr<std::unique_ptr<CrawlReader>> Open(const std::string& path, CrawlReaderOptions options);
  // Reads JSON Lines from an already open stream, which the reader does not close.
  static std::unique_ptr<CrawlReader> FromStream(std::FILE* stream, CrawlReaderOptions options);
  virtual ~CrawlReader();
  CrawlReader(const CrawlReader&) = delete;
  CrawlReader& operator=(const CrawlReader&) = delete;

  // Called for each bad line or record. Default: log a warning (first 20 in full, then every
  // 1000th).
  void set_on_bad_line(std::function<void(const BadLine&)> f) { on_bad_line_ = std::move(f); }

  // Fills *record with the next good record and returns true; false at end of input or on an I/O
  // error (then status() says which), or when a followed file has nothing more readable yet
  // (paused(): see CrawlReaderOptions::readable).
  virtual bool Next(CrawlRecord* record) = 0;
  virtual bool paused() const { return false; }

  virtual const Status& status() const = 0;
  const CrawlReaderStats& stats() const { return stats_; }
  // Size of the input in bytes when known (regular files), for progress and ETA.
  virtual std::optional<uint64_t> total_bytes() const = 0;
  std::string Summary() const { return SummarizeReader(stats_); }

 protected:
  // `unit` names what a bad-record warning counts: "line" or "WARC record".
  CrawlReader(bool quiet_bad_lines, const char* unit);
  void Report(uint64_t line, std::string reason);

  CrawlReaderStats stats_;

 private:
  std::function<void(const BadLine&)> on_bad_line_;
};

}  // namespace neardup
