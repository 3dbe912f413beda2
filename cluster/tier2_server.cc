#include "cluster/tier2_server.h"

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <boost/asio.hpp>

#include "cluster/frame.h"
#include "cluster/tier2_service.h"
#include "common/thread_priority.h"

namespace neardup::cluster {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

class Tier2ServerImpl final : public Tier2Server {
 public:
  explicit Tier2ServerImpl(const Tier2ServerOptions& o)
      : options_(o), service_(o.store), work_(static_cast<size_t>(o.work_threads)), acceptor_(io_) {}
  ~Tier2ServerImpl() override { Stop(); }

  Status Listen(const std::string& host, uint16_t port) {
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(host, ec);
    if (ec) return InvalidArgument("tier2 server: " + host + " is not an IP address");
    const tcp::endpoint endpoint(address, port);
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return IoError("tier2 server: cannot listen on " + options_.listen + ": " + ec.message());
    port_ = acceptor_.local_endpoint().port();
    asio::co_spawn(io_, Accept(), asio::detached);
    for (int i = 0; i < options_.io_threads; ++i) {
      threads_.emplace_back([this, i] {
        NameThisThread("nd-t2-io-" + std::to_string(i));
        io_.run();
      });
    }
    return Status::Ok();
  }

  uint16_t port() const override { return port_; }

  void Stop() override {
    {
      std::lock_guard lock(mu_);
      if (stopped_) return;
      stopped_ = true;
    }
    io_.stop();
    for (auto& t : threads_) t.join();
    threads_.clear();
    work_.join();
    // No thread runs the io_context now: the listening socket and every connection close, so a
    // peer waiting for an answer learns at once that none will come.
    boost::system::error_code ec;
    acceptor_.close(ec);
    {
      std::lock_guard lock(connections_mu_);
      for (tcp::socket* s : connections_) s->close(ec);
    }
    cv_.notify_all();
  }

  void Wait() override {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return stopped_; });
  }

 private:
  asio::awaitable<void> Accept() {
    for (;;) {
      boost::system::error_code ec;
      tcp::socket socket = co_await acceptor_.async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        if (!acceptor_.is_open()) co_return;
        spdlog::warn("tier2 server: accept: {}", ec.message());
        continue;
      }
      socket.set_option(tcp::no_delay(true), ec);
      asio::co_spawn(io_, Serve(std::move(socket)), asio::detached);
    }
  }

  // One connection: frames in, answers out, in order.
  asio::awaitable<void> Serve(tcp::socket socket) {
    Registered registered(this, &socket);
    std::string peer;
    boost::system::error_code ec;
    const auto remote = socket.remote_endpoint(ec);
    peer = ec ? std::string("?") : remote.address().to_string() + ":" + std::to_string(remote.port());
    char header[kFrameHeaderBytes];
    std::string body, out;
    for (;;) {
      co_await asio::async_read(socket, asio::buffer(header), asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;  // the peer closed (or the server stops)
      auto h = DecodeFrameHeader(header);
      if (!h.ok() || h->type != MessageType::kTier2Request) {
        spdlog::warn("tier2 server: {}: {}; closing the connection", peer,
                     h.ok() ? std::string("a frame that is not a request") : h.status().message());
        co_return;
      }
      body.resize(h->length);
      co_await asio::async_read(socket, asio::buffer(body), asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      pb::Tier2Request request;
      if (Status s = DecodeFrameBody(*h, body, &request); !s.ok()) {
        spdlog::warn("tier2 server: {}: {}; closing the connection", peer, s.message());
        co_return;
      }
      // The work on the work pool; this coroutine resumes on its connection's executor.
      pb::Tier2Response response = co_await asio::co_spawn(
          work_,
          [this, &request]() -> asio::awaitable<pb::Tier2Response> { co_return service_.Handle(std::move(request)); },
          asio::use_awaitable);
      out.clear();
      if (Status s = EncodeFrame(MessageType::kTier2Response, response, &out, h->version); !s.ok()) {
        pb::Tier2Response refused;
        refused.set_id(response.id());
        refused.set_code(static_cast<uint32_t>(s.code()));
        refused.set_message(s.message());
        out.clear();
        (void)EncodeFrame(MessageType::kTier2Response, refused, &out, h->version);
      }
      co_await asio::async_write(socket, asio::buffer(out), asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
    }
  }

  // A connection's socket, known to Stop while its coroutine lives.
  struct Registered {
    Registered(Tier2ServerImpl* server, tcp::socket* socket) : server_(server), socket_(socket) {
      std::lock_guard lock(server_->connections_mu_);
      server_->connections_.insert(socket_);
    }
    ~Registered() {
      std::lock_guard lock(server_->connections_mu_);
      server_->connections_.erase(socket_);
    }
    Tier2ServerImpl* server_;
    tcp::socket* socket_;
  };

  // Declared before io_: the connections' coroutines, destroyed with io_, unregister here.
  std::mutex connections_mu_;
  std::set<tcp::socket*> connections_;  // guarded by connections_mu_
  const Tier2ServerOptions options_;
  Tier2Service service_;
  asio::io_context io_;
  asio::thread_pool work_;
  tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;  // guarded by mu_
};

}  // namespace

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

StatusOr<std::unique_ptr<Tier2Server>> Tier2Server::Start(const Tier2ServerOptions& options) {
  if (options.io_threads < 1 || options.work_threads < 1) {
    return InvalidArgument("tier2 server: io_threads and work_threads must be at least 1");
  }
  if (options.store.empty()) return InvalidArgument("tier2 server: no store directory");
  std::string host;
  uint16_t port = 0;
  RETURN_IF_ERROR(ParseHostPort(options.listen, &host, &port));
  auto server = std::make_unique<Tier2ServerImpl>(options);
  RETURN_IF_ERROR(server->Listen(host, port));
  return std::unique_ptr<Tier2Server>(std::move(server));
}

}  // namespace neardup::cluster
