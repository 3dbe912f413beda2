#include "cluster/fault_proxy/fault_proxy.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/asio/experimental/as_tuple.hpp>

#include "cluster/http/net.h"
#include "common/thread_priority.h"

namespace neardup::cluster {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
constexpr auto kProxyTuple = asio::experimental::as_tuple(asio::use_awaitable);

StatusOr<tcp::endpoint> Endpoint(const std::string& text, const char* what) {
  std::string host;
  uint16_t port = 0;
  RETURN_IF_ERROR(ParseHostPort(text, &host, &port));
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) return InvalidArgument(std::string("fault proxy: the ") + what + " " + host + " is not an IP address");
  return tcp::endpoint(address, port);
}

class FaultProxyImpl;

// One accepted connection and its connection to the target. Used on the proxy's thread only (and
// by Stop once that thread has ended).
struct Link {
  Link(FaultProxyImpl* proxy, tcp::socket accepted);
  ~Link();
  // Closes both sides once: with RST when `reset`, else FIN.
  void Close(bool reset);

  FaultProxyImpl* const proxy;
  tcp::socket client;
  tcp::socket server;
  uint64_t forwarded[2] = {0, 0};  // by direction: [0] to the server, [1] to the client
  bool closed = false;
};

class FaultProxyImpl final : public FaultProxy {
 public:
  FaultProxyImpl(const FaultProxyOptions& o, tcp::endpoint target)
      : faults_(o.faults), target_(target) {}
  ~FaultProxyImpl() override { Stop(); }

  // One thread: every link's both sides and their timers run on it.
  Status Listen(const std::string& listen) {
    return listener_.Start(listen, "fault proxy", "nd-fault-proxy", [this](tcp::socket socket, asio::io_context& home) {
      connections_.fetch_add(1);
      asio::co_spawn(home, Session(std::move(socket)), asio::detached);
    });
  }

  uint16_t port() const override { return listener_.port(); }
  // The one context every link runs on.
  asio::io_context& io() { return listener_.pool().context(0); }
  void SetFaults(const FaultProxyFaults& faults) override {
    std::lock_guard lock(faults_mu_);
    faults_ = faults;
  }
  FaultProxyFaults faults() const override {
    std::lock_guard lock(faults_mu_);
    return faults_;
  }
  uint64_t connections() const override { return connections_.load(); }
  uint64_t open_connections() const override { return open_.load(); }
  uint64_t bytes_to_server() const override { return bytes_[0].load(); }
  uint64_t bytes_to_client() const override { return bytes_[1].load(); }

  void Stop() override {
    {
      std::lock_guard lock(stop_mu_);
      if (stopped_) return;
      stopped_ = true;
    }
    listener_.Stop();
    // No thread runs the io_context now: close every link here, so the peers learn it at once
    // (the coroutines' frames go with the listener's pool).
    std::lock_guard lock(links_mu_);
    for (Link* l : links_) l->Close(false);
  }

 private:
  friend struct Link;

  asio::awaitable<void> Session(tcp::socket accepted) {
    const FaultProxyFaults f = faults();
    boost::system::error_code ec;
    if (f.mode == FaultMode::kDrop) {
      accepted.close(ec);
      co_return;
    }
    if (f.mode == FaultMode::kReset && f.after_bytes == 0 && f.direction == FaultDirection::kBoth) {
      accepted.set_option(asio::socket_base::linger(true, 0), ec);
      accepted.close(ec);
      co_return;
    }
    auto link = std::make_shared<Link>(this, std::move(accepted));
    auto [connected] = co_await link->server.async_connect(target_, kProxyTuple);
    if (connected || link->closed) {
      if (connected) spdlog::warn("fault proxy: connect to the target: {}", connected.message());
      link->Close(false);
      co_return;
    }
    link->client.set_option(tcp::no_delay(true), ec);
    link->server.set_option(tcp::no_delay(true), ec);
    asio::co_spawn(io(), Pump(link, 0), asio::detached);
    asio::co_spawn(io(), Pump(link, 1), asio::detached);
  }

  // One direction of a link: 0 client → server, 1 server → client.
  asio::awaitable<void> Pump(std::shared_ptr<Link> link, int dir) {
    tcp::socket& from = dir == 0 ? link->client : link->server;
    tcp::socket& to = dir == 0 ? link->server : link->client;
    const FaultDirection mine = dir == 0 ? FaultDirection::kToServer : FaultDirection::kToClient;
    asio::steady_timer timer(io());
    std::vector<char> buffer(16 * 1024);
    for (;;) {
      auto [read, n] = co_await from.async_read_some(asio::buffer(buffer), kProxyTuple);
      if (read || link->closed) break;
      const FaultProxyFaults f = faults();
      if (f.delay_ms > 0) {
        timer.expires_after(std::chrono::milliseconds(f.delay_ms));
        co_await timer.async_wait(kProxyTuple);
        if (link->closed) break;
      }
      FaultMode mode = f.mode;
      if (mode != FaultMode::kDrop && f.direction != FaultDirection::kBoth && f.direction != mine) {
        mode = FaultMode::kPass;
      }
      if (mode == FaultMode::kDrop) break;
      if (mode == FaultMode::kBlackhole) continue;
      size_t forward = n;
      const bool cut = mode == FaultMode::kTruncate || mode == FaultMode::kReset;
      if (cut) {
        const uint64_t left = f.after_bytes > link->forwarded[dir] ? f.after_bytes - link->forwarded[dir] : 0;
        forward = static_cast<size_t>(std::min<uint64_t>(left, n));
      }
      if (forward > 0) {
        auto [wrote, w] = co_await asio::async_write(to, asio::buffer(buffer.data(), forward), kProxyTuple);
        if (wrote || link->closed) break;
        link->forwarded[dir] += w;
        bytes_[dir].fetch_add(w);
      }
      if (cut && link->forwarded[dir] >= f.after_bytes) {
        link->Close(mode == FaultMode::kReset);
        co_return;
      }
    }
    link->Close(false);
  }

  mutable std::mutex faults_mu_;
  FaultProxyFaults faults_;  // guarded by faults_mu_
  const tcp::endpoint target_;
  std::atomic<uint64_t> connections_{0}, open_{0};
  std::atomic<uint64_t> bytes_[2] = {0, 0};
  // Declared before listener_: the links, destroyed with the coroutines' frames in its pool,
  // unregister here.
  std::mutex links_mu_;
  std::set<Link*> links_;  // guarded by links_mu_
  TcpListener listener_{1};
  std::mutex stop_mu_;
  bool stopped_ = false;  // guarded by stop_mu_
};

Link::Link(FaultProxyImpl* p, tcp::socket accepted) : proxy(p), client(std::move(accepted)), server(p->io()) {
  proxy->open_.fetch_add(1);
  std::lock_guard lock(proxy->links_mu_);
  proxy->links_.insert(this);
}

Link::~Link() {
  Close(false);
  std::lock_guard lock(proxy->links_mu_);
  proxy->links_.erase(this);
}

void Link::Close(bool reset) {
  if (closed) return;
  closed = true;
  proxy->open_.fetch_sub(1);
  boost::system::error_code ec;
  for (tcp::socket* s : {&client, &server}) {
    if (reset && s->is_open()) s->set_option(asio::socket_base::linger(true, 0), ec);
    s->close(ec);
  }
}

}  // namespace

StatusOr<FaultMode> ParseFaultMode(const std::string& text) {
  if (text == "pass") return FaultMode::kPass;
  if (text == "drop") return FaultMode::kDrop;
  if (text == "blackhole") return FaultMode::kBlackhole;
  if (text == "truncate") return FaultMode::kTruncate;
  if (text == "reset") return FaultMode::kReset;
  return InvalidArgument("fault proxy: unknown mode \"" + text + "\" (pass, drop, blackhole, truncate, reset)");
}

StatusOr<FaultDirection> ParseFaultDirection(const std::string& text) {
  if (text == "both") return FaultDirection::kBoth;
  if (text == "to-server") return FaultDirection::kToServer;
  if (text == "to-client") return FaultDirection::kToClient;
  return InvalidArgument("fault proxy: unknown direction \"" + text + "\" (both, to-server, to-client)");
}

StatusOr<std::unique_ptr<FaultProxy>> FaultProxy::Start(const FaultProxyOptions& options) {
  if (options.target.empty()) return InvalidArgument("fault proxy: no target");
  ASSIGN_OR_RETURN(tcp::endpoint target, Endpoint(options.target, "target"));
  auto proxy = std::make_unique<FaultProxyImpl>(options, target);
  RETURN_IF_ERROR(proxy->Listen(options.listen));
  return std::unique_ptr<FaultProxy>(std::move(proxy));
}

}  // namespace neardup::cluster
