// WARC input: the crawl records of a WARC file (ISO 28500, WARC/1.0 and 1.1), as Heritrix, Nutch,
// StormCrawler and `wget --warc-file` write them, plain (.warc) or gzip-compressed (.warc.gz: one
// gzip member per record, as those crawlers write it; any multi-member or single-member gzip
// stream is read). Opened through CrawlReader::Open (document/crawl_reader.h), which picks this
// reader for a path ending in .warc or .warc.gz; callers see the same CrawlRecord either way.
//
// What becomes a record, for each WARC `response` record whose block is an HTTP response:
//   url         WARC-Target-URI (angle brackets, if any, removed); not an absolute http(s) URL:
//               the record is reported and skipped
//   fetched_at  WARC-Date
//   2xx with an HTML Content-Type (text/html, application/xhtml+xml) or none
//               -> a content record: the HTTP body, HTML, de-chunked (Transfer-Encoding:
//                  chunked) and decompressed (Content-Encoding: gzip, x-gzip, deflate), in UTF-8
//                  (ISO-8859-1 / windows-1252 / US-ASCII charsets converted; other bytes that are
//                  not UTF-8 become U+FFFD, counted in utf8_repaired)
//   3xx with a Location  -> a redirect to Location, resolved against the URL (RFC 3986)
//   404, 410             -> a gone record
// Skipped and counted in CrawlReaderStats: `revisit` records (warc_revisits), 2xx responses with
// another Content-Type (warc_non_html), other HTTP statuses (warc_other_status: 304, 5xx, a 3xx
// without Location, ...), and records that are not responses (warc_not_response: warcinfo,
// request, metadata, resource, ...).
//
// A bad record is reported through the reader's bad-line callback with its 1-based record number
// and a reason that starts with "record at byte N" (N: its offset in the file; in a .warc.gz,
// in the decompressed stream, with the gzip member's offset in the file), and skipped; reading
// goes on at the next record:
//   - truncated: the file ends inside the record (in its header or before Content-Length bytes
//     of block): reported, and the input ends there;
//   - corrupt: no "WARC/" version line, a missing or bad Content-Length, a block not followed by
//     CRLF CRLF, a block longer than max_line_bytes (never held in memory), a response whose
//     HTTP head or chunked body is malformed, a gzip member that does not inflate (the reader
//     goes on at the next gzip member): reading goes on at the next "WARC/1." line.
//
// CrawlRecord::line is the WARC record's number, end_offset where it ends in the file (in a
// .warc.gz, where the last gzip member that ended within or at the end of the record ends).
//
// Thread safety: a reader is used by one thread at a time.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "document/crawl_reader.h"

namespace neardup {

// Opens a .warc or .warc.gz file (by its name's ending). IoError if it cannot be opened.
// options.readable is not supported (CrawlReader::Open refuses it); options.want_url is asked
// about each response's URL before its HTTP block is parsed.
StatusOr<std::unique_ptr<CrawlReader>> OpenWarcReader(const std::string& path, CrawlReaderOptions options);

// `ref` (a Location header) resolved against the absolute URL `base` (RFC 3986 section 5.2, with
// dot segments removed). An absolute `ref` is returned as it is (dot segments removed).
std::string ResolveUrl(std::string_view base, std::string_view ref);

}  // namespace neardup
