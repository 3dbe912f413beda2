#include "cluster/http/net.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/log_limit.h"
#include "common/thread_priority.h"

namespace neardup::cluster {

namespace asio = boost::asio;
using asio::ip::tcp;

IoContextPool::IoContextPool(int threads) {
  const int n = threads < 1 ? 1 : threads;
  for (int i = 0; i < n; ++i) contexts_.push_back(std::make_unique<asio::io_context>(1));
}

IoContextPool::~IoContextPool() { Stop(); }

asio::io_context& IoContextPool::next() {
  return *contexts_[next_.fetch_add(1, std::memory_order_relaxed) % contexts_.size()];
}

void IoContextPool::Run(const std::string& name) {
  for (size_t i = 0; i < contexts_.size(); ++i) {
    threads_.emplace_back([this, i, name] {
      NameThisThread(name + "-" + std::to_string(i));
      auto guard = asio::make_work_guard(*contexts_[i]);
      contexts_[i]->run();
    });
  }
}

void IoContextPool::Stop() {
  if (stopped_) return;
  stopped_ = true;
  for (auto& c : contexts_) c->stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

Status ParseHostPort(const std::string& text, std::string* host, uint16_t* port) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    return InvalidArgument("\"" + text + "\" is not host:port");
  }
  *host = text.substr(0, colon);
  if (host->size() > 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  uint32_t p = 0;
  for (size_t i = colon + 1; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9' || (p = p * 10 + static_cast<uint32_t>(text[i] - '0')) > 65535) {
      return InvalidArgument("\"" + text + "\": the port must be a number in 0..65535");
    }
  }
  *port = static_cast<uint16_t>(p);
  return Status::Ok();
}

Status ListenOn(tcp::acceptor& acceptor, const std::string& listen, const std::string& who) {
  std::string host;
  uint16_t port = 0;
  if (Status s = ParseHostPort(listen, &host, &port); !s.ok()) return InvalidArgument(who + ": " + s.message());
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) return InvalidArgument(who + ": " + host + " is not an IP address");
  const tcp::endpoint endpoint(address, port);
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return IoError(who + ": cannot listen on " + listen + ": " + ec.message());
  return Status::Ok();
}

TcpListener::TcpListener(int io_threads)
    : io_(io_threads), acceptor_(io_.context(0)) {}

TcpListener::~TcpListener() { Stop(); }

namespace {

// The accept loop: until the acceptor closes.
asio::awaitable<void> AcceptLoop(tcp::acceptor& acceptor, IoContextPool& io, const TcpListener::OnAccept& on_accept,
                                 const std::string& who) {
  LogLimit log_limit(5);
  for (;;) {
    boost::system::error_code ec;
    asio::io_context& home = io.next();
    tcp::socket socket = co_await acceptor.async_accept(home, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
      // e.g. too many open files: the next accept may do.
      if (uint64_t skipped = 0; log_limit.Allow(&skipped)) {
        spdlog::warn("{}: accept: {} ({} like it not logged)", who, ec.message(), skipped);
      }
      continue;
    }
    on_accept(std::move(socket), home);
  }
}

}  // namespace

Status TcpListener::Start(const std::string& listen, const std::string& who, const std::string& thread_name,
                          OnAccept on_accept) {
  RETURN_IF_ERROR(ListenOn(acceptor_, listen, who));
  port_ = acceptor_.local_endpoint().port();
  on_accept_ = std::move(on_accept);
  who_ = who;
  asio::co_spawn(io_.context(0), AcceptLoop(acceptor_, io_, on_accept_, who_), asio::detached);
  io_.Run(thread_name);
  return Status::Ok();
}

void TcpListener::Stop() {
  if (stopped_) return;
  stopped_ = true;
  io_.Stop();
  boost::system::error_code ec;
  acceptor_.close(ec);
}

}  // namespace neardup::cluster
