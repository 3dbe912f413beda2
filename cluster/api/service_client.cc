// ServiceClient: ingest with retries, settling, status of many URLs, metrics (service_client.h).
#include "cluster/api/service_client.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <sstream>
#include <thread>

namespace neardup::cluster {

StatusOr<std::unique_ptr<ServiceClient>> ServiceClient::Create(ServiceClientOptions options) {
  if (options.batch_records == 0) return InvalidArgument("service client: batch_records must be >= 1");
  ASSIGN_OR_RETURN(std::unique_ptr<HttpClient> http, HttpClient::Create(options.server, {.timeout = options.timeout, .ca_file = options.ca_file}));
  return std::unique_ptr<ServiceClient>(new ServiceClient(std::move(options), std::move(http)));
}

Status ServiceClient::AddLine(std::string line, uint64_t line_no) {
  if (lines_.empty()) first_line_ = line_no;
  lines_.push_back(std::move(line));
  ++counts_.sent;
  return lines_.size() >= o_.batch_records ? Send() : Status::Ok();
}

Status ServiceClient::FlushLines() { return Send(); }

Status ServiceClient::Send() {
  std::map<std::string, std::string> headers = {{"Content-Type", "application/x-ndjson"}};
  if (!o_.token.empty()) headers["Authorization"] = "Bearer " + o_.token;
  uint32_t backoff_ms = 100, attempts = 0;
  while (!lines_.empty()) {
    std::string body;
    for (const std::string& l : lines_) body += l, body += '\n';
    StatusOr<HttpClient::Reply> r = http_->Request("POST", "/v1/pages", body, headers);
    if (r.ok() && r->status == 202) {
      counts_.accepted += lines_.size();
      lines_.clear();
      return Status::Ok();
    }
    if (r.ok() && r->status == 400) {
      // The server names the first bad line of the request (1-based): it goes, the rest again.
      const size_t at = r->body.find("\"line\":\"");
      const uint64_t bad = at == std::string::npos ? 0 : std::strtoull(r->body.c_str() + at + 8, nullptr, 10);
      if (bad >= 1 && bad <= lines_.size()) {
        spdlog::warn("{}: line {}: refused: {}", o_.source, first_line_ + bad - 1, r->body.substr(0, r->body.find('\n')));
        ++counts_.refused;
        lines_.erase(lines_.begin() + static_cast<long>(bad - 1));
        continue;
      }
    }
    if (r.ok() && (r->status == 401 || r->status == 403)) {
      // Every request after it would be refused alike: the input ends here, saying why.
      lines_.clear();
      return FailedPrecondition(o_.source + ": the server refused the request at line " + std::to_string(first_line_) +
                                " (" + std::to_string(r->status) + " " + r->body.substr(0, r->body.find('\n')) +
                                "): give the writers' token (--token-file, or --config of the cluster)");
    }
    if (r.ok() && r->status != 429 && r->status != 503) {
      spdlog::error("{}: lines {}..: the server answered {}: {}", o_.source, first_line_, r->status, r->body);
      counts_.refused += lines_.size();
      lines_.clear();
      return Status::Ok();
    }
    if (++attempts > o_.max_retries) {
      const std::string why = r.ok() ? std::to_string(r->status) + " " + r->body : r.status().message();
      lines_.clear();
      return Unavailable(o_.source + ": the server stopped accepting at line " + std::to_string(first_line_) + ": " +
                         why);
    }
    uint32_t wait = backoff_ms;
    if (r.ok()) {
      if (auto ra = r->headers.find("retry-after"); ra != r->headers.end()) {
        wait = std::max<uint32_t>(wait, 1000 * static_cast<uint32_t>(std::strtoul(ra->second.c_str(), nullptr, 10)));
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(wait));
    backoff_ms = std::min<uint32_t>(backoff_ms * 2, 10000);
  }
  return Status::Ok();
}

StatusOr<std::map<std::string, double>> ServiceClient::Metrics() {
  ASSIGN_OR_RETURN(HttpClient::Reply r, http_->Request("GET", "/metrics", ""));
  if (r.status != 200) return Corruption("GET /metrics answered " + std::to_string(r.status));
  std::map<std::string, double> out;
  std::istringstream in(r.body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    out[line.substr(0, space)] = std::strtod(line.c_str() + space + 1, nullptr);
  }
  return out;
}

Status ServiceClient::AwaitSettled(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    ASSIGN_OR_RETURN(auto m, Metrics());
    const auto pending = m.find("neardup_pending_pages"), backlog = m.find("neardup_ingest_backlog_bytes");
    if (pending == m.end() || backlog == m.end()) {
      return Corruption("the server's /metrics has no neardup_pending_pages or neardup_ingest_backlog_bytes");
    }
    if (pending->second == 0 && backlog->second == 0) return Status::Ok();
    if (std::chrono::steady_clock::now() > deadline) {
      return DeadlineExceeded("the service did not settle in " + std::to_string(timeout.count()) + " ms (" +
                              std::to_string(static_cast<uint64_t>(pending->second)) + " pages pending)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

StatusOr<std::vector<std::string>> ServiceClient::Statuses(const std::vector<std::string>& urls, unsigned connections) {
  connections = std::max(1u, std::min<unsigned>(connections, static_cast<unsigned>(urls.size())));
  std::vector<std::string> out(urls.size());
  std::vector<Status> failed(connections);
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  auto work = [&](unsigned k) {
    StatusOr<std::unique_ptr<HttpClient>> http = HttpClient::Create(o_.server, {.timeout = o_.timeout, .ca_file = o_.ca_file});
    if (!http.ok()) {
      failed[k] = http.status();
      stop = true;
      return;
    }
    for (size_t i; !stop && (i = next.fetch_add(1)) < urls.size();) {
      StatusOr<HttpClient::Reply> r = (*http)->Request("GET", "/v1/status?url=" + UrlEncode(urls[i]), "");
      if (!r.ok()) {
        failed[k] = r.status();
      } else if (r->status != 200 && r->status != 404) {
        failed[k] = Corruption("status of " + urls[i] + ": the server answered " + std::to_string(r->status) + ": " +
                               r->body);
      } else {
        out[i] = std::move(r->body);
        continue;
      }
      stop = true;
    }
  };
  std::vector<std::thread> threads;
  for (unsigned k = 1; k < connections; ++k) threads.emplace_back(work, k);
  work(0);
  for (std::thread& t : threads) t.join();
  for (const Status& s : failed) RETURN_IF_ERROR(s);
  return out;
}

}  // namespace neardup::cluster
