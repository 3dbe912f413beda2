// neardup bench status-http: status queries over loopback HTTP with keep-alive, from N client
// threads, against a running Tier 1 server; optionally while another thread ingests at full
// speed, and side by side with redis-benchmark's GET against a local redis-server in the same
// minute (the reference figure for a keyed read over the network on this machine).
//
//   neardup bench status-http --server http://127.0.0.1:8080 --input crawl.jsonl [--clients 8]
//       [--seconds 10] [--ingest more.jsonl] [--redis]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <thread>

#include "cli/commands.h"
#include "cluster/http_client.h"
#include "cluster/net.h"
#include "document/crawl_reader.h"

namespace neardup::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string server, input, ingest;
  int clients = 8;
  double seconds = 10;
  bool redis = false;
  uint32_t ingest_batch = 1000;
};

// A keep-alive HTTP/1.1 client on a blocking socket, as lean as redis-benchmark's: one send and
// (as a rule) one recv per request, so that the client's own cost, which shares the machine with
// the server, is small. GET only; the response's body is skipped by its Content-Length.
class LeanClient {
 public:
  ~LeanClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool Connect(const std::string& host, uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    if (::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) return false;
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  }
  // The response's status code (0: the connection failed).
  unsigned Get(const std::string& target) {
    request_ = "GET " + target + " HTTP/1.1\r\nHost: bench\r\n\r\n";
    if (::send(fd_, request_.data(), request_.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request_.size())) return 0;
    size_t header_end = std::string::npos;
    for (;;) {
      if (header_end == std::string::npos) header_end = in_.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        const size_t cl = in_.find("Content-Length: ");
        const size_t body = cl != std::string::npos && cl < header_end ? std::strtoull(in_.c_str() + cl + 16, nullptr, 10) : 0;
        if (in_.size() >= header_end + 4 + body) {
          const unsigned status = in_.size() > 12 ? static_cast<unsigned>(std::atoi(in_.c_str() + 9)) : 0;
          in_.erase(0, header_end + 4 + body);
          return status;
        }
      }
      char buf[16384];
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return 0;
      in_.append(buf, static_cast<size_t>(n));
    }
  }

 private:
  int fd_ = -1;
  std::string request_, in_;
};

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

// redis-benchmark -t get against a redis-server started here on a free port; requests/s (0: not
// available, with the reason logged).
double RedisGetPerSecond(int clients, double seconds) {
  if (std::system("command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null") != 0) {
    spdlog::warn("bench: redis-server / redis-benchmark not found (apt-get install redis-server; for the benchmark "
                 "only)");
    return 0;
  }
  const int port = 20000 + static_cast<int>(::getpid() % 20000);
  const std::string start = "redis-server --port " + std::to_string(port) +
                            " --save '' --appendonly no --daemonize yes --pidfile /tmp/neardup-bench-redis-" +
                            std::to_string(port) + ".pid --logfile /dev/null";
  if (std::system(start.c_str()) != 0) return 0;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // About as many requests as the HTTP run made in its time, so both run for similar seconds.
  const std::string out = "/tmp/neardup-bench-redis-" + std::to_string(port) + ".txt";
  const std::string run = "redis-benchmark -p " + std::to_string(port) + " -t get -c " + std::to_string(clients) +
                          " -n " + std::to_string(static_cast<long>(seconds * 50000)) + " -q > " + out + " 2>&1";
  (void)std::system(("redis-cli -p " + std::to_string(port) + " set key:__rand_int__ x >/dev/null 2>&1").c_str());
  const int rc = std::system(run.c_str());
  (void)std::system(("redis-cli -p " + std::to_string(port) + " shutdown nosave >/dev/null 2>&1").c_str());
  if (rc != 0) return 0;
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(out.c_str());
  // "GET: 123456.78 requests per second, p50=0.159 msec" (the last \r-separated progress line).
  const size_t at = text.rfind("GET: ");
  return at == std::string::npos ? 0 : std::strtod(text.c_str() + at + 5, nullptr);
}

int BenchStatusHttp(const Args& a) {
  std::vector<std::string> urls;
  {
    auto reader = CrawlReader::Open(a.input, {});
    if (!reader.ok()) {
      spdlog::error("{}", reader.status().message());
      return 2;
    }
    CrawlRecord r;
    while ((*reader)->Next(&r)) urls.push_back(r.url);
  }
  if (urls.empty()) {
    spdlog::error("bench: {} holds no records", a.input);
    return 2;
  }
  std::vector<std::string> targets;
  targets.reserve(urls.size());
  for (const auto& u : urls) targets.push_back("/v1/status?url=" + cluster::UrlEncode(u));

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> ingested{0}, ingest_refused{0};
  std::thread ingest;
  if (!a.ingest.empty()) {
    ingest = std::thread([&] {
      auto c = cluster::HttpClient::Create(a.server);
      std::ifstream in(a.ingest);
      std::vector<std::string> bodies;
      std::string body, line;
      uint32_t n = 0;
      std::vector<uint32_t> counts;
      while (std::getline(in, line)) {
        body += line + "\n";
        if (++n == a.ingest_batch) bodies.push_back(std::move(body)), counts.push_back(n), body.clear(), n = 0;
      }
      if (n > 0) bodies.push_back(std::move(body)), counts.push_back(n);
      for (size_t i = 0; !stop && c.ok() && !bodies.empty(); i = (i + 1) % bodies.size()) {
        auto r = (*c)->Request("POST", "/v1/pages", bodies[i]);
        if (r.ok() && r->status == 202) ingested += counts[i];
        else ingest_refused += counts[i];
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // ingest under way first
  }
  std::string host;
  uint16_t port = 0;
  {
    std::string hp = a.server.rfind("http://", 0) == 0 ? a.server.substr(7) : a.server;
    while (!hp.empty() && hp.back() == '/') hp.pop_back();
    if (Status s = cluster::ParseHostPort(hp, &host, &port); !s.ok()) {
      spdlog::error("bench: --server {}: {}", a.server, s.message());
      return 2;
    }
  }
  std::vector<std::vector<double>> lat(static_cast<size_t>(a.clients));
  std::atomic<uint64_t> errors{0};
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a.seconds));
  std::vector<std::thread> threads;
  for (int t = 0; t < a.clients; ++t) {
    threads.emplace_back([&, t] {
      LeanClient c;
      if (!c.Connect(host, port)) {
        ++errors;
        return;
      }
      std::mt19937_64 rng(static_cast<uint64_t>(t) * 7919 + 1);
      std::vector<double>& mine = lat[static_cast<size_t>(t)];
      mine.reserve(1 << 20);
      while (Clock::now() < deadline) {
        const auto s = Clock::now();
        const unsigned status = c.Get(targets[rng() % targets.size()]);
        mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - s).count());
        if (status != 200) {
          ++errors;
          if (status == 0) return;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  stop = true;
  if (ingest.joinable()) ingest.join();
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  const double rate = static_cast<double>(all.size()) / secs;
  const double p50 = Percentile(all, 0.50), p99 = Percentile(all, 0.99);
  std::printf("status-http: %d clients, %.0f requests/s, p50 %.3f ms, p99 %.3f ms, %llu errors (%.1f s)\n", a.clients,
              rate, p50, p99, static_cast<unsigned long long>(errors.load()), secs);
  if (!a.ingest.empty()) {
    std::printf("ingest meanwhile: %.0f records/s accepted, %llu records refused (429)\n",
                static_cast<double>(ingested.load()) / secs, static_cast<unsigned long long>(ingest_refused.load()));
  }
  if (a.redis) {
    const double redis = RedisGetPerSecond(a.clients, a.seconds);
    if (redis > 0) {
      std::printf("redis-benchmark -t get: %d clients, %.0f requests/s; status-http / redis = %.2f\n", a.clients, redis,
                  rate / redis);
    }
  }
  return errors.load() == 0 ? 0 : 1;
}

}  // namespace

void AddBenchStatusHttp(CLI::App* bench, int* exit_code) {
  auto* cmd = bench->add_subcommand("status-http", "Status queries over loopback HTTP with keep-alive from N clients");
  auto a = std::make_shared<Args>();
  cmd->add_option("--server", a->server, "the API, http://host:port")->required();
  cmd->add_option("--input", a->input, "crawl whose URLs are asked about (at random)")->required();
  cmd->add_option("--clients", a->clients, "concurrent clients, one connection each")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--seconds", a->seconds, "how long to ask")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--ingest", a->ingest, "ingest this crawl over and over meanwhile (status during ingest)");
  cmd->add_flag("--redis", a->redis, "run redis-benchmark -t get against a local redis-server afterwards");
  cmd->callback([a, exit_code] { *exit_code = BenchStatusHttp(*a); });
}

}  // namespace neardup::cli
