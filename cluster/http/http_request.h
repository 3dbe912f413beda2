// What the crawlers' HTTP API reads from a request, apart from the network and the service: a
// query parameter, and an ingest body's records. The untrusted input's parsers, in one place (the
// HTTP fuzz target, cluster/api/http_request_fuzz.cc, runs them on Beast's parse of any bytes).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace neardup::cluster {

// A decimal number (a group id in a path): digits only, at most 20, no sign, no space, and within
// uint64_t. InvalidArgument naming `what` and the text otherwise. Never throws: the text is a
// client's.
StatusOr<uint64_t> ParseDecimalId(std::string_view text, std::string_view what);

// Percent-decodes the value of `key` in a request target's query string ("/p?a=1&url=..."; '+' is
// a space); empty when absent.
std::string QueryParam(std::string_view target, std::string_view key);

// An ingest body (JSON Lines crawl records) checked whole: every non-blank line must parse as a
// crawl record (document/crawl_reader.h) no longer than max_line_bytes. *lines gets the records,
// one per line, each ending with '\n' ('\r' and blank lines dropped); *urls each record's URL with
// the offset in *lines where its line ends. InvalidArgument "line N: why" (1-based) for the first
// bad line; nothing is output then.
Status CheckIngestBody(std::string_view body, uint64_t max_line_bytes, std::string* lines,
                       std::vector<std::pair<std::string, uint64_t>>* urls);

}  // namespace neardup::cluster
