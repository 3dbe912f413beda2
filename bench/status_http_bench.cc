#include "bench/status_http_bench.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <thread>

#include "cluster/http/http_client.h"
#include "cluster/http/net.h"
#include "document/crawl_reader.h"

namespace neardup::bench {
namespace {

using Clock = std::chrono::steady_clock;

// N keep-alive HTTP/1.1 connections driven by one thread over epoll, as redis-benchmark drives
// its clients: each connection has one request in flight, and the next is sent as soon as its
// response is whole. The client's own cost shares the machine with the server, so it is kept to
// one send and (as a rule) one recv per request and no thread switch. GET only; a response's body
// is skipped by its Content-Length.
class EventLoopClients {
 public:
  // `next` gives each request's target; `done` gets each response's status (0: the connection
  // failed) and latency in ms.
  EventLoopClients(std::function<const std::string&()> next, std::function<void(unsigned, double)> done)
      : next_(std::move(next)), done_(std::move(done)) {}
  ~EventLoopClients() {
    for (Conn& c : conns_) {
      if (c.fd >= 0) ::close(c.fd);
    }
    if (epoll_ >= 0) ::close(epoll_);
  }

  // Opens `n` connections; false (nothing sent) when one cannot connect.
  bool Connect(const std::string& host, uint16_t port, int n) {
    epoll_ = ::epoll_create1(0);
    if (epoll_ < 0) return false;
    conns_.resize(static_cast<size_t>(n));
    for (size_t i = 0; i < conns_.size(); ++i) {
      Conn& c = conns_[i];
      c.fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(port);
      if (c.fd < 0 || ::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) return false;
      const int one = 1;
      ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      if (::connect(c.fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return false;
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = i;
      if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, c.fd, &ev) != 0) return false;
    }
    return true;
  }

  // Keeps every connection busy until `deadline`; then waits (10 s at most) for the requests in
  // flight.
  void Run(Clock::time_point deadline) {
    for (Conn& c : conns_) Send(c);
    size_t open = conns_.size();
    epoll_event events[64];
    while (open > 0) {
      const int n = ::epoll_wait(epoll_, events, 64, 1000);
      for (int e = 0; e < n; ++e) {
        Conn& c = conns_[events[e].data.u64];
        if (c.fd < 0) continue;
        const unsigned status = Receive(c);
        if (status == kIncomplete) continue;
        done_(status, std::chrono::duration<double, std::milli>(Clock::now() - c.sent).count());
        if (status != 0 && Clock::now() < deadline) {
          if (Send(c)) continue;
          done_(0, 0);  // the connection broke between two requests
        }
        ::close(c.fd);
        c.fd = -1;
        --open;
      }
      if (n < 0 && errno != EINTR) return;
      if (Clock::now() > deadline + std::chrono::seconds(10)) return;  // a server that stopped answering
    }
  }

 private:
  static constexpr unsigned kIncomplete = 1000;
  struct Conn {
    int fd = -1;
    std::string in;
    Clock::time_point sent;
  };

  bool Send(Conn& c) {
    request_.assign("GET ").append(next_()).append(" HTTP/1.1\r\nHost: bench\r\n\r\n");
    c.sent = Clock::now();
    return ::send(c.fd, request_.data(), request_.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request_.size());
  }

  // Reads what has arrived; the status once the response is whole, kIncomplete before, 0 when the
  // connection failed.
  unsigned Receive(Conn& c) {
    char buf[16384];
    const ssize_t n = ::recv(c.fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return 0;
    if (n > 0) c.in.append(buf, static_cast<size_t>(n));
    const size_t header_end = c.in.find("\r\n\r\n");
    if (header_end == std::string::npos) return kIncomplete;
    const size_t cl = c.in.find("Content-Length: ");
    const size_t body = cl != std::string::npos && cl < header_end ? std::strtoull(c.in.c_str() + cl + 16, nullptr, 10) : 0;
    if (c.in.size() < header_end + 4 + body) return kIncomplete;
    const unsigned status = c.in.size() > 12 ? static_cast<unsigned>(std::atoi(c.in.c_str() + 9)) : 0;
    c.in.erase(0, header_end + 4 + body);
    return status == kIncomplete ? 0 : status;
  }

  std::function<const std::string&()> next_;
  std::function<void(unsigned, double)> done_;
  int epoll_ = -1;
  std::vector<Conn> conns_;
  std::string request_;
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

// The status targets of the crawl's URLs; 2 (logged) when the crawl cannot be read or is empty.
int ReadTargets(const std::string& input, std::vector<std::string>* targets) {
  std::vector<std::string> urls;
  {
    auto reader = CrawlReader::Open(input, {});
    if (!reader.ok()) {
      spdlog::error("{}", reader.status().message());
      return 2;
    }
    CrawlRecord r;
    while ((*reader)->Next(&r)) urls.push_back(r.url);
  }
  if (urls.empty()) {
    spdlog::error("bench: {} holds no records", input);
    return 2;
  }
  targets->reserve(urls.size());
  for (const auto& u : urls) targets->push_back("/v1/status?url=" + cluster::UrlEncode(u));
  return 0;
}

// --ingest: a thread posting the crawl's records in batches, over and over, until Stop.
class BackgroundIngest {
 public:
  explicit BackgroundIngest(const StatusHttpBenchOptions& a) {
    if (a.ingest.empty()) return;
    thread_ = std::thread([this, &a] {
      auto c = cluster::HttpClient::Create(a.server, {.ca_file = a.ca_file});
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
      for (size_t i = 0; !stop_ && c.ok() && !bodies.empty(); i = (i + 1) % bodies.size()) {
        auto r = (*c)->Request("POST", "/v1/pages", bodies[i]);
        if (r.ok() && r->status == 202) ingested_ += counts[i];
        else refused_ += counts[i];
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // ingest under way first
  }
  ~BackgroundIngest() { Stop(); }
  BackgroundIngest(const BackgroundIngest&) = delete;
  BackgroundIngest& operator=(const BackgroundIngest&) = delete;

  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  uint64_t ingested() const { return ingested_.load(); }
  uint64_t refused() const { return refused_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> ingested_{0}, refused_{0};
  std::thread thread_;
};

// The requests' latencies (ms), errors and seconds.
struct Asked {
  std::vector<double> all;
  uint64_t errors = 0;
  double secs = 0;
};

// A thread and a kept-alive HttpClient per client, each its own latencies, merged after. 2 (logged)
// when a client could not be made.
int AskBlocking(const StatusHttpBenchOptions& a, const std::vector<std::string>& targets, BackgroundIngest* ingest,
                Asked* out) {
  std::vector<std::vector<double>> lat(static_cast<size_t>(a.clients));
  std::vector<uint64_t> errs(static_cast<size_t>(a.clients), 0);
  std::atomic<int> failed_to_start{0};
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  const auto until = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a.seconds));
  for (int i = 0; i < a.clients; ++i) {
    threads.emplace_back([&, i] {
      auto c = cluster::HttpClient::Create(a.server, {.timeout = std::chrono::seconds(10), .ca_file = a.ca_file});
      if (!c.ok()) {
        ++failed_to_start;
        return;
      }
      std::mt19937_64 own(static_cast<uint64_t>(i) + 1);
      while (Clock::now() < until) {
        const auto s0 = Clock::now();
        auto r = (*c)->Request("GET", targets[own() % targets.size()], "");
        lat[static_cast<size_t>(i)].push_back(std::chrono::duration<double, std::milli>(Clock::now() - s0).count());
        if (!r.ok() || r->status != 200) ++errs[static_cast<size_t>(i)];
      }
    });
  }
  for (auto& t : threads) t.join();
  out->secs = std::chrono::duration<double>(Clock::now() - t0).count();
  ingest->Stop();
  if (failed_to_start > 0) {
    spdlog::error("bench: --server {}: {} clients could not be made", a.server, failed_to_start.load());
    return 2;
  }
  for (int i = 0; i < a.clients; ++i) {
    out->all.insert(out->all.end(), lat[static_cast<size_t>(i)].begin(), lat[static_cast<size_t>(i)].end());
    out->errors += errs[static_cast<size_t>(i)];
  }
  return 0;
}

// N connections on this thread (EventLoopClients). 2 (logged) for a bad --server, 1 when the
// connections cannot be opened.
int AskEventLoop(const StatusHttpBenchOptions& a, const std::vector<std::string>& targets, BackgroundIngest* ingest,
                 Asked* out) {
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
  std::mt19937_64 rng(1);
  EventLoopClients clients([&]() -> const std::string& { return targets[rng() % targets.size()]; },
                           [&](unsigned status, double ms) {
                             out->all.push_back(ms);
                             out->errors += status != 200;
                           });
  if (!clients.Connect(host, port, a.clients)) {
    spdlog::error("bench: cannot open {} connections to {}", a.clients, a.server);
    ingest->Stop();
    return 1;
  }
  const auto t0 = Clock::now();
  clients.Run(t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a.seconds)));
  out->secs = std::chrono::duration<double>(Clock::now() - t0).count();
  ingest->Stop();
  return 0;
}

}  // namespace

int RunStatusHttpBench(const StatusHttpBenchOptions& a) {
  std::vector<std::string> targets;
  if (int rc = ReadTargets(a.input, &targets); rc != 0) return rc;
  BackgroundIngest ingest(a);
  const bool blocking = a.blocking || a.server.starts_with("https://");
  Asked asked;
  asked.all.reserve(1 << 22);
  const int rc = blocking ? AskBlocking(a, targets, &ingest, &asked) : AskEventLoop(a, targets, &ingest, &asked);
  if (rc != 0) return rc;
  const double rate = static_cast<double>(asked.all.size()) / asked.secs;
  const double p50 = Percentile(asked.all, 0.50), p99 = Percentile(asked.all, 0.99);
  std::printf("status-http: %d %sclients, %.0f requests/s, p50 %.3f ms, p99 %.3f ms, %llu errors (%.1f s)\n", a.clients,
              blocking ? (a.server.starts_with("https://") ? "blocking HTTPS " : "blocking HTTP ") : "",
              rate, p50, p99, static_cast<unsigned long long>(asked.errors), asked.secs);
  if (!a.ingest.empty()) {
    std::printf("ingest meanwhile: %.0f records/s accepted, %llu records refused (429)\n",
                static_cast<double>(ingest.ingested()) / asked.secs, static_cast<unsigned long long>(ingest.refused()));
  }
  if (a.redis) {
    const double redis = RedisGetPerSecond(a.clients, a.seconds);
    if (redis > 0) {
      std::printf("redis-benchmark -t get: %d clients, %.0f requests/s; status-http / redis = %.2f\n", a.clients, redis,
                  rate / redis);
    }
  }
  return asked.errors == 0 ? 0 : 1;
}

}  // namespace neardup::bench
