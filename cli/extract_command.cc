// neardup extract: a crawl (JSON Lines or WARC) rewritten as JSON Lines with each page's visible
// text, the document model's own extraction (document/html_text.h). What text-only tools read:
// the exact baseline on text, other near-duplicate tools compared side by side
// (experiments/peers.sh), a crawl kept small.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "common/json_write.h"
#include "common/rfc3339.h"
#include "document/crawl_reader.h"
#include "document/html_text.h"

namespace neardup::cli {
namespace {

// One record as a JSON line: url, then text (content pages), redirect_to or gone, and the
// fields the record carried.
void AppendRecord(const CrawlRecord& r, const std::string& text, std::string* line) {
  line->clear();
  *line += "{\"url\":";
  AppendJsonString(line, r.url);
  if (r.gone) {
    *line += ",\"gone\":true";
  } else if (r.is_redirect()) {
    *line += ",\"redirect_to\":";
    AppendJsonString(line, r.redirect_to);
  } else {
    *line += ",\"text\":";
    AppendJsonString(line, text);
  }
  if (r.fetched_at_ms) {
    *line += ",\"fetched_at\":\"";
    AppendRfc3339(line, *r.fetched_at_ms / 1000);
    *line += "\"";
  }
  if (!r.market.empty()) {
    *line += ",\"market\":";
    AppendJsonString(line, r.market);
  }
  if (r.popularity != 0) *line += fmt::format(",\"popularity\":{}", r.popularity);  // shortest exact form
  *line += "}\n";
}

Status Extract(const std::string& input, const std::string& out, const CrawlReaderOptions& reader_options,
               uint64_t* written) {
  ASSIGN_OR_RETURN(auto reader, CrawlReader::Open(input, reader_options));
  ASSIGN_OR_RETURN(auto html, HtmlToText::Create());
  std::FILE* f = out == "-" ? stdout : std::fopen(out.c_str(), "wb");
  if (f == nullptr) return IoError("cannot write " + out);
  CrawlRecord r;
  std::string text, line;
  Status s;
  while (s.ok() && reader->Next(&r)) {
    if (r.has_content() && r.is_html) {
      s = html->Extract(r.body, &text);
      if (!s.ok()) s = Internal(input + ": record " + std::to_string(r.line) + ": " + s.message());
    } else {
      text = r.body;
    }
    if (!s.ok()) break;
    AppendRecord(r, text, &line);
    if (std::fwrite(line.data(), 1, line.size(), f) != line.size()) s = IoError("cannot write " + out);
    ++*written;
  }
  if (s.ok()) s = reader->status();
  if (f != stdout && std::fclose(f) != 0 && s.ok()) s = IoError("cannot write " + out);
  if (f == stdout) std::fflush(f);
  spdlog::info("extract: {}", reader->Summary());
  return s;
}

}  // namespace

void RegisterExtract(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "extract", "Rewrite a crawl (JSON Lines or WARC) as JSON Lines with each page's visible text instead of its HTML");
  struct Args {
    std::string input, out;
    uint64_t max_line_bytes = 0;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("--input", args->input, "crawl: JSON Lines (- for stdin), .warc or .warc.gz")->required();
  cmd->add_option("--out", args->out, "JSON Lines to write (- for stdout): url, text | redirect_to | gone, fetched_at, market, popularity")
      ->required();
  cmd->add_option("--max-line-bytes", args->max_line_bytes, "skip crawl lines longer than this many bytes (default: the reader's)");
  cmd->callback([args, exit_code] {
    CrawlReaderOptions o;
    if (args->max_line_bytes != 0) o.max_line_bytes = args->max_line_bytes;
    uint64_t written = 0;
    if (Status s = Extract(args->input, args->out, o, &written); !s.ok()) {
      spdlog::error("extract: {}", s.message());
      *exit_code = s.code() == StatusCode::kInvalidArgument ? 2 : 1;
      return;
    }
    spdlog::info("extract: {} records written to {}", written, args->out);
  });
}

}  // namespace neardup::cli
