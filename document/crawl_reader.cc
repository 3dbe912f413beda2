#include "document/crawl_reader.h"

#include "common/json_write.h"
#include "common/rfc3339.h"
#include "document/json_fields.h"
#include "document/json_lines.h"
#include "document/warc_reader.h"

#include <fmt/format.h>
#include <simdjson.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cmath>
#include <cstring>

namespace neardup {
namespace {

// Bytes the JSON parser may read past a document's end; a line handed to it has them allocated
// (their content does not matter), which spares the parser a padded copy of every line.
constexpr size_t kPadding = simdjson::SIMDJSON_PADDING;

Status ParseObject(simdjson::dom::object obj, CrawlRecord* out) {
  bool present = false;
  RETURN_IF_ERROR(RequiredJsonString(obj, "url", &out->url));
  if (!IsAbsoluteHttpUrl(out->url)) return JsonFieldError("url", "is not an absolute http(s) URL");

  out->redirect_to.clear();
  RETURN_IF_ERROR(OptionalJsonString(obj, "redirect_to", &out->redirect_to, &present));
  if (present && !IsAbsoluteHttpUrl(out->redirect_to)) {
    return JsonFieldError("redirect_to", "is not an absolute http(s) URL");
  }
  bool has_html = false, has_text = false;
  std::string text;
  RETURN_IF_ERROR(OptionalJsonString(obj, "html", &out->body, &has_html));
  RETURN_IF_ERROR(OptionalJsonString(obj, "text", has_html ? &text : &out->body, &has_text));
  out->is_html = has_html;
  out->gone = false;
  simdjson::dom::element e;
  if (obj["gone"].get(e) == simdjson::SUCCESS && !e.is_null()) {
    bool gone = false;
    if (e.get_bool().get(gone) != simdjson::SUCCESS) return JsonFieldError("gone", "must be a boolean (true or false)");
    out->gone = gone;
  }
  if (out->gone) {
    out->body.clear();
    out->is_html = false;
    out->redirect_to.clear();
  } else if (out->is_redirect()) {
    out->body.clear();
    out->is_html = false;
  } else if (!has_html && !has_text) {
    return InvalidArgument("needs 'html' or 'text' (or 'redirect_to', or 'gone': true)");
  }

  out->popularity = 0;
  if (obj["popularity"].get(e) == simdjson::SUCCESS && !e.is_null()) {
    double p;
    if (e.get_double().get(p) != simdjson::SUCCESS) return JsonFieldError("popularity", "must be a number");
    if (!(p >= 0) || !std::isfinite(p)) return JsonFieldError("popularity", "must be a finite number >= 0");
    out->popularity = p;
  }
  std::string when;
  out->fetched_at_ms.reset();
  RETURN_IF_ERROR(OptionalJsonString(obj, "fetched_at", &when, &present));
  if (present) {
    out->fetched_at_ms = ParseRfc3339(when);
    if (!out->fetched_at_ms) return JsonFieldError("fetched_at", "is not an RFC 3339 date-time");
  }
  out->market.clear();
  RETURN_IF_ERROR(OptionalJsonString(obj, "market", &out->market, &present));
  return Status::Ok();
}

// 0 for an ok parse, 1 for an ok parse after UTF-8 repair; error status otherwise. `padded`: the
// line has kPadding bytes allocated after its end.
StatusOr<int> ParseLine(std::string_view line, bool padded, CrawlRecord* out) {
  simdjson::dom::object obj;
  bool repaired = false;
  RETURN_IF_ERROR(ParseJsonLine(line, {.padded = padded, .repair_utf8 = true}, &obj, &repaired));
  RETURN_IF_ERROR(ParseObject(obj, out));
  return repaired ? 1 : 0;
}

}  // namespace

Status ParseCrawlRecord(std::string_view line, CrawlRecord* out) {
  auto r = ParseLine(line, /*padded=*/false, out);
  return r.ok() ? Status::Ok() : r.status();
}

bool IsAbsoluteHttpUrl(std::string_view url) {
  size_t rest;
  auto starts = [&](std::string_view p) {
    if (url.size() < p.size()) return false;
    for (size_t i = 0; i < p.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(url[i])) != p[i]) return false;
    }
    return true;
  };
  if (starts("http://")) rest = 7;
  else if (starts("https://")) rest = 8;
  else return false;
  if (rest >= url.size() || url[rest] == '/' || url[rest] == '?' || url[rest] == '#') return false;
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7F) return false;
  }
  return true;
}

CrawlReader::CrawlReader(bool quiet_bad_lines, const char* unit) {
  if (quiet_bad_lines) return;  // counted in Report, not logged
  on_bad_line_ = [this, unit](const BadLine& b) {
    if (stats_.bad_lines <= 20 || stats_.bad_lines % 1000 == 0) {
      spdlog::warn("{} {}: {} (skipped; {} bad so far)", unit, b.line, b.reason, stats_.bad_lines);
    }
  };
}

CrawlReader::~CrawlReader() = default;

void CrawlReader::Report(uint64_t line, std::string reason) {
  ++stats_.bad_lines;
  if (on_bad_line_) on_bad_line_(BadLine{line, std::move(reason)});
}

namespace {

LineReaderOptions LinesOf(const CrawlReaderOptions& o) {
  return {.max_line_bytes = o.max_line_bytes, .padding = kPadding, .readable = o.readable,
          .drop_read_pages = o.drop_read_pages};
}

// The JSON Lines reader.
class JsonlCrawlReader final : public CrawlReader {
 public:
  JsonlCrawlReader(std::unique_ptr<LineReader> lines, CrawlReaderOptions options)
      : CrawlReader(options.quiet_bad_lines, "line"), lines_(std::move(lines)), options_(std::move(options)) {}

  bool Next(CrawlRecord* record) override;
  bool paused() const override { return lines_->paused(); }
  const Status& status() const override { return lines_->status(); }
  std::optional<uint64_t> total_bytes() const override { return lines_->total_bytes(); }

 private:
  // True when want_url is set, the line's URL could be read, and want_url refused it.
  bool PassOver();

  // The lines, each with the JSON parser's padding after it (it reads past a document's end).
  std::unique_ptr<LineReader> lines_;
  CrawlReaderOptions options_;
  std::string_view line_view_;
};

bool JsonlCrawlReader::PassOver() {
  if (!options_.want_url) return false;
  // The layout FormatJsonLine and most crawlers write: the URL first, a string without escapes.
  // Read where it lies, the rest of the line unread; any other line goes through the parser.
  constexpr std::string_view kUrlFirst = "{\"url\":\"";
  if (line_view_.starts_with(kUrlFirst)) {
    const std::string_view rest = line_view_.substr(kUrlFirst.size());
    const size_t end = rest.find_first_of("\"\\");
    if (end != std::string_view::npos && rest[end] == '"') {
      if (options_.want_url(rest.substr(0, end))) return false;
      ++stats_.passed_over;
      return true;
    }
  }
  thread_local simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  if (parser.iterate(line_view_.data(), line_view_.size(), line_view_.size() + kPadding).get(doc) != simdjson::SUCCESS) {
    return false;
  }
  std::string_view url;
  if (doc.find_field_unordered("url").get_string().get(url) != simdjson::SUCCESS) return false;
  if (options_.want_url(url)) return false;
  ++stats_.passed_over;
  return true;
}

bool JsonlCrawlReader::Next(CrawlRecord* record) {
  bool too_long = false;
  while (lines_->Next(&line_view_, &too_long)) {
    const uint64_t line_no = stats_.lines = lines_->line_number();
    stats_.bytes = lines_->bytes();
    if (too_long) {
      Report(line_no, "line longer than max_line_bytes (" + std::to_string(options_.max_line_bytes) + ")");
      continue;
    }
    if (!line_view_.empty() && line_view_.back() == '\r') line_view_.remove_suffix(1);
    if (line_view_.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (PassOver()) continue;
    auto r = ParseLine(line_view_, /*padded=*/true, record);
    if (!r.ok()) {
      Report(line_no, r.status().message());
      continue;
    }
    stats_.utf8_repaired += static_cast<uint64_t>(*r);
    record->line = line_no;
    record->end_offset = lines_->bytes();
    ++stats_.records;
    return true;
  }
  return false;
}

}  // namespace

std::string FormatJsonLine(const CrawlRecord& r) {
  std::string out = "{\"url\":";
  out.reserve(r.url.size() + r.body.size() + r.redirect_to.size() + 96);
  AppendJsonString(&out, r.url);
  if (r.gone) {
    out += ",\"gone\":true";
  } else if (r.is_redirect()) {
    out += ",\"redirect_to\":";
    AppendJsonString(&out, r.redirect_to);
  } else {
    out += r.is_html ? ",\"html\":" : ",\"text\":";
    AppendJsonString(&out, r.body);
  }
  if (r.popularity != 0) fmt::format_to(std::back_inserter(out), ",\"popularity\":{}", r.popularity);
  if (r.fetched_at_ms) {
    const int64_t ms = *r.fetched_at_ms;
    const int64_t secs = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
    out += ",\"fetched_at\":\"";
    AppendRfc3339(&out, secs);
    if (const int64_t frac = ms - secs * 1000; frac != 0) {
      out.pop_back();  // the 'Z'
      fmt::format_to(std::back_inserter(out), ".{:03d}Z", frac);
    }
    out += '"';
  }
  if (!r.market.empty()) {
    out += ",\"market\":";
    AppendJsonString(&out, r.market);
  }
  out += '}';
  return out;
}

bool IsWarcPath(std::string_view path) { return path.ends_with(".warc") || path.ends_with(".warc.gz"); }

StatusOr<std::unique_ptr<CrawlReader>> CrawlReader::Open(const std::string& path, CrawlReaderOptions options) {
  if (IsWarcPath(path)) {
    if (options.readable) return InvalidArgument("crawl " + path + ": a WARC input cannot be followed as it grows");
    return OpenWarcReader(path, std::move(options));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> lines, LineReader::Open(path, LinesOf(options), "crawl"));
  return std::unique_ptr<CrawlReader>(new JsonlCrawlReader(std::move(lines), std::move(options)));
}

std::unique_ptr<CrawlReader> CrawlReader::FromStream(std::FILE* stream, CrawlReaderOptions options) {
  auto lines = LineReader::FromStream(stream, LinesOf(options));
  return std::unique_ptr<CrawlReader>(new JsonlCrawlReader(std::move(lines), std::move(options)));
}

StatusOr<uint64_t> EstimateRecordCount(const std::string& path, CrawlReaderOptions options, uint64_t probe_bytes) {
  // Records are passed over after their URL until the probe is read; the first past it is
  // returned, and ends the probe.
  const CrawlReader* probing = nullptr;
  options.want_url = [&probing, probe_bytes](std::string_view) {
    return probing != nullptr && probing->stats().bytes >= probe_bytes;
  };
  options.quiet_bad_lines = true;
  options.readable = nullptr;
  options.drop_read_pages = false;
  ASSIGN_OR_RETURN(auto reader, CrawlReader::Open(path, std::move(options)));
  probing = reader.get();
  CrawlRecord r;
  bool ended = true;
  while (reader->Next(&r)) {
    if (reader->stats().bytes >= probe_bytes) {
      ended = false;
      break;
    }
  }
  RETURN_IF_ERROR(reader->status());
  const CrawlReaderStats& st = reader->stats();
  const uint64_t seen = st.records + st.passed_over;
  const std::optional<uint64_t> total = reader->total_bytes();
  if (ended || !total || st.bytes == 0) return seen;
  return static_cast<uint64_t>(static_cast<double>(seen) * static_cast<double>(*total) / static_cast<double>(st.bytes));
}

std::string SummarizeReader(const CrawlReaderStats& s) {
  const char* unit = s.warc ? " WARC records, " : " lines, ";
  std::string out = std::to_string(s.records) + " records from " + std::to_string(s.lines) + unit +
                    std::to_string(s.bad_lines) + (s.warc ? " bad records skipped, " : " bad lines skipped, ") + std::to_string(s.utf8_repaired) +
                    " repaired (invalid UTF-8)";
  if (s.passed_over > 0) out += ", " + std::to_string(s.passed_over) + " passed over by URL";
  if (s.warc_revisits + s.warc_non_html + s.warc_other_status + s.warc_not_response > 0) {
    out += "; WARC records skipped: " + std::to_string(s.warc_revisits) + " revisits, " +
           std::to_string(s.warc_non_html) + " not HTML, " + std::to_string(s.warc_other_status) +
           " other HTTP status, " + std::to_string(s.warc_not_response) + " not responses";
  }
  return out;
}

}  // namespace neardup
