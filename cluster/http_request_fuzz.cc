// libFuzzer target: any bytes, read as HTTP requests on one kept-alive connection the way the
// crawlers' API reads them (cluster/http_server.h's limits on header and body), then what the API
// reads of each request (cluster/http_request.h): the url parameter of its target and, for a
// body, the ingest check. Whatever the bytes, parsing refuses or succeeds; an accepted body's
// records each parse again, one per line, and their URLs are absolute http(s) URLs.
//
//   scripts/fuzz.sh 60        (builds build-fuzz/ with clang, runs every fuzz target for 60 s)
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>
#include <string>
#include <string_view>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "cluster/http_request.h"
#include "document/crawl_reader.h"

namespace {

namespace beast = boost::beast;
namespace http = beast::http;

void Check(bool ok) {
  if (!ok) std::abort();  // a broken invariant: libFuzzer reports it with the input
}

// What the API does with one parsed request, short of the service.
void Read(const http::request<http::string_body>& request) {
  const std::string_view target(request.target().data(), request.target().size());
  const std::string url = neardup::cluster::QueryParam(target, "url");
  Check(url.size() <= target.size());
  std::string lines;
  std::vector<std::pair<std::string, uint64_t>> urls;
  const neardup::Status s = neardup::cluster::CheckIngestBody(request.body(), 64 << 10, &lines, &urls);
  if (!s.ok()) {
    Check(lines.empty() && urls.empty() && s.message().rfind("line ", 0) == 0);
    return;
  }
  uint64_t at = 0;
  neardup::CrawlRecord r;
  for (const auto& [u, end] : urls) {
    Check(end > at && end <= lines.size() && lines[end - 1] == '\n');
    const std::string_view line(lines.data() + at, end - at - 1);
    Check(neardup::ParseCrawlRecord(line, &r).ok() && r.url == u && neardup::IsAbsoluteHttpUrl(u));
    at = end;
  }
  Check(at == lines.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  beast::flat_buffer buffer;
  {
    auto b = buffer.prepare(size);
    if (size > 0) std::memcpy(b.data(), data, size);
    buffer.commit(size);
  }
  // Requests one after another, as keep-alive brings them, until the bytes end or one is bad.
  for (int i = 0; i < 16 && buffer.size() > 0; ++i) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(16384);
    parser.body_limit(1 << 20);
    parser.eager(true);
    beast::error_code ec;
    size_t used = 0;
    while (!parser.is_done() && buffer.size() > 0) {
      const size_t n = parser.put(buffer.data(), ec);
      buffer.consume(n);
      used += n;
      if (ec == http::error::need_more) {
        ec = {};
        break;  // the connection would wait for more (and time out)
      }
      if (ec || n == 0) break;
    }
    if (ec || !parser.is_done()) return 0;  // answered 400/413/431 and closed, or still waiting
    Read(parser.get());
    if (used == 0) return 0;
  }
  return 0;
}
