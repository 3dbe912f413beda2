#include "cluster/http/http_request.h"

#include <charconv>

#include "document/crawl_reader.h"

namespace neardup::cluster {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

StatusOr<uint64_t> ParseDecimalId(std::string_view text, std::string_view what) {
  // The text goes back in the error: cut, so that a long one does not make a long answer.
  auto bad = [&](std::string_view why) {
    const std::string shown(text.substr(0, 40));
    return InvalidArgument(std::string(what) + " is a decimal number below 2^64" + std::string(why) + ": \"" + shown +
                           (text.size() > 40 ? "...\"" : "\""));
  };
  if (text.empty() || text.size() > 20 || text.find_first_not_of("0123456789") != std::string_view::npos) return bad("");
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc::result_out_of_range) return bad(" (out of range)");
  if (ec != std::errc() || end != text.data() + text.size()) return bad("");
  return v;
}

std::string QueryParam(std::string_view target, std::string_view key) {
  const size_t q = target.find('?');
  if (q == std::string_view::npos) return "";
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    const size_t eq = pair.find('=');
    if (eq == std::string_view::npos || pair.substr(0, eq) != key) continue;
    std::string out;
    std::string_view v = pair.substr(eq + 1);
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] == '+') {
        out += ' ';
      } else if (v[i] == '%' && i + 2 < v.size() && HexValue(v[i + 1]) >= 0 && HexValue(v[i + 2]) >= 0) {
        out += static_cast<char>(HexValue(v[i + 1]) * 16 + HexValue(v[i + 2]));
        i += 2;
      } else {
        out += v[i];
      }
    }
    return out;
  }
  return "";
}

Status CheckIngestBody(std::string_view body, uint64_t max_line_bytes, std::string* lines,
                       std::vector<std::pair<std::string, uint64_t>>* urls) {
  lines->clear();
  urls->clear();
  lines->reserve(body.size() + 1);
  CrawlRecord r;
  uint64_t line_no = 0;
  size_t pos = 0;
  Status bad;
  while (pos < body.size() && bad.ok()) {
    size_t nl = body.find('\n', pos);
    if (nl == std::string_view::npos) nl = body.size();
    std::string_view line = body.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (line.size() > max_line_bytes) {
      bad = InvalidArgument("line " + std::to_string(line_no) + ": longer than reader.max_line_bytes (" +
                            std::to_string(max_line_bytes) + ")");
    } else if (Status s = ParseCrawlRecord(line, &r); !s.ok()) {
      bad = InvalidArgument("line " + std::to_string(line_no) + ": " + s.message());
    } else {
      lines->append(line);
      *lines += '\n';
      urls->emplace_back(std::move(r.url), lines->size());
    }
  }
  if (!bad.ok()) {
    lines->clear();
    urls->clear();
  }
  return bad;
}

}  // namespace neardup::cluster
