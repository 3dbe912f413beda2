#include "cluster/http/net.h"

#include <boost/asio/executor_work_guard.hpp>

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

}  // namespace neardup::cluster
