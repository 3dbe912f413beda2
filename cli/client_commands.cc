// neardup ingest and neardup status: command-line clients of the crawlers' HTTP API
// (cluster/http_api.h).
#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <thread>

#include "cli/commands.h"
#include "cluster/http_client.h"

namespace neardup::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The token from a file (first line), or "".
StatusOr<std::string> ReadToken(const std::string& file) {
  if (file.empty()) return std::string();
  std::ifstream f(file);
  if (!f) return InvalidArgument("cannot read the bearer token file " + file);
  std::string t;
  std::getline(f, t);
  return t;
}

}  // namespace

void RegisterClients(CLI::App& app, int* exit_code) {
  // neardup ingest
  auto* ingest = app.add_subcommand("ingest", "Send a crawl (JSON Lines records) to a Tier 1 server's API");
  struct IngestArgs {
    std::string server, input, token_file;
    uint64_t batch_records = 1000;
    uint32_t max_retries = 20;
  };
  auto ia = std::make_shared<IngestArgs>();
  ingest->add_option("--server", ia->server, "the API, http://host:port")->required();
  ingest->add_option("--input", ia->input, "crawl JSON Lines")->required();
  ingest->add_option("--bearer-token-file", ia->token_file, "file holding the writers' bearer token");
  ingest->add_option("--batch-records", ia->batch_records, "records per request")->capture_default_str()->check(CLI::PositiveNumber);
  ingest->add_option("--max-retries", ia->max_retries, "attempts per request on 429, 503 or a lost connection")->capture_default_str();
  ingest->footer(
      "Exit code: 0 every record accepted; 1 some lines refused as bad (each named, the rest accepted); "
      "3 the server stopped accepting (unreachable, or still busy after --max-retries).");
  ingest->callback([ia, exit_code] {
    auto token = ReadToken(ia->token_file);
    if (!token.ok()) {
      spdlog::error("{}", token.status().message());
      *exit_code = 2;
      return;
    }
    auto client = cluster::HttpClient::Create(ia->server);
    if (!client.ok()) {
      spdlog::error("{}", client.status().message());
      *exit_code = 2;
      return;
    }
    std::ifstream in(ia->input, std::ios::binary);
    if (!in) {
      spdlog::error("cannot read {}", ia->input);
      *exit_code = 2;
      return;
    }
    std::map<std::string, std::string> headers = {{"Content-Type", "application/x-ndjson"}};
    if (!token->empty()) headers["Authorization"] = "Bearer " + *token;
    uint64_t sent = 0, accepted = 0, refused_lines = 0, line_no = 0;
    const auto start = Clock::now();
    auto last_report = start;
    // One request: the lines [first_line, ...) of `lines`; a line the server names as bad is
    // reported and left out, and the rest sent again.
    std::vector<std::string> lines;
    auto send = [&](uint64_t first_line) -> bool {
      uint32_t backoff_ms = 100, attempts = 0;
      while (!lines.empty()) {
        std::string body;
        for (const auto& l : lines) body += l, body += '\n';
        auto r = (*client)->Request("POST", "/v1/pages", body, headers);
        if (r.ok() && r->status == 202) {
          accepted += lines.size();
          lines.clear();
          return true;
        }
        if (r.ok() && r->status == 400 && r->body.find("\"line\":\"") != std::string::npos) {
          const size_t at = r->body.find("\"line\":\"") + 8;
          const uint64_t bad = std::strtoull(r->body.c_str() + at, nullptr, 10);
          if (bad >= 1 && bad <= lines.size()) {
            spdlog::warn("{}: line {}: refused: {}", ia->input, first_line + bad - 1, r->body.substr(0, r->body.find('\n')));
            ++refused_lines;
            lines.erase(lines.begin() + static_cast<long>(bad - 1));
            continue;
          }
        }
        if (r.ok() && r->status != 429 && r->status != 503) {
          spdlog::error("{}: lines {}..: the server answered {}: {}", ia->input, first_line, r->status, r->body);
          refused_lines += lines.size();
          lines.clear();
          return true;
        }
        if (++attempts > ia->max_retries) {
          spdlog::error("{}: giving up at line {}: {}", ia->input, first_line,
                        r.ok() ? std::to_string(r->status) + " " + r->body : r.status().message());
          return false;
        }
        uint32_t wait = backoff_ms;
        if (r.ok() && r->headers.count("retry-after")) wait = std::max<uint32_t>(wait, 1000 * std::stoul(r->headers["retry-after"]));
        std::this_thread::sleep_for(std::chrono::milliseconds(wait));
        backoff_ms = std::min<uint32_t>(backoff_ms * 2, 10000);
      }
      return true;
    };
    std::string line;
    uint64_t first = 1;
    bool ok = true;
    while (ok && std::getline(in, line)) {
      ++line_no;
      if (lines.empty()) first = line_no;
      lines.push_back(std::move(line));
      ++sent;
      if (lines.size() >= ia->batch_records) ok = send(first);
      if (Clock::now() - last_report > std::chrono::seconds(5)) {
        last_report = Clock::now();
        spdlog::info("ingest: {} records accepted ({:.0f}/s)", accepted,
                     static_cast<double>(accepted) / std::chrono::duration<double>(last_report - start).count());
      }
    }
    if (ok) ok = send(first);
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    std::cout << "ingest: " << accepted << " of " << sent << " records accepted in " << secs << " s ("
              << (secs > 0 ? static_cast<double>(accepted) / secs : 0) << " records/s); " << refused_lines
              << " refused\n";
    *exit_code = !ok ? 3 : refused_lines > 0 ? 1 : 0;
  });
}

}  // namespace neardup::cli

namespace neardup::cli {

int StatusOverHttp(const std::string& server, const std::vector<std::string>& urls) {
  auto client = cluster::HttpClient::Create(server);
  if (!client.ok()) {
    spdlog::error("{}", client.status().message());
    return 2;
  }
  int code = 0;
  for (const std::string& url : urls) {
    auto r = (*client)->Request("GET", "/v1/status?url=" + cluster::UrlEncode(url), "");
    if (!r.ok()) {
      spdlog::error("{}", r.status().message());
      return 3;
    }
    std::string body = r->body;
    while (!body.empty() && body.back() == '\n') body.pop_back();
    std::cout << body << "\n";
    if (r->status != 200) code = 1;
  }
  return code;
}

}  // namespace neardup::cli
