#include "cluster/tier2_server/tier2_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>
#include <variant>

#include <boost/asio.hpp>
#include <boost/asio/experimental/as_tuple.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include "cluster/tier2_server/frame.h"
#include "cluster/http/net.h"
#include "cluster/tier2_server/tier2_service.h"
#include "cluster/http/tls.h"
#include "common/free_memory.h"
#include "common/log_limit.h"

// g++ 12 at -O1 (the sanitizer builds) inlines the connection coroutine's frame allocation into
// Accept: Asio allocates the frame with aligned_alloc and frees it with free, through its own
// operator new and delete, and the compiler takes the pair for a mismatch. A false positive.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace neardup::cluster {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
constexpr auto kTuple = asio::experimental::as_tuple(asio::use_awaitable);

class Tier2ServerImpl final : public Tier2Server {
 public:
  explicit Tier2ServerImpl(const Tier2ServerOptions& o)
      : options_(o),
        service_(o.store),
        listener_(o.io_threads),
        work_(static_cast<size_t>(o.work_threads)) {}
  ~Tier2ServerImpl() override { Stop(); }

  Status Listen() {
    if (options_.tls.enabled()) {
      ASSIGN_OR_RETURN(tls_, MakeTlsContext(options_.tls, TlsRole::kServer));
    } else {
      std::string host;
      uint16_t port = 0;
      RETURN_IF_ERROR(ParseHostPort(options_.listen, &host, &port));
      if (!IsLoopbackHost(host)) {
        return InvalidArgument("tier2 server: listening on " + options_.listen +
                               " (beyond loopback) needs mutual TLS: tier2_server.tls (neardup certs init)");
      }
    }
    return listener_.Start(options_.listen, "tier2 server", "nd-t2-io",
                           [this](tcp::socket socket, asio::io_context& home) { Admit(std::move(socket), home); });
  }

  uint16_t port() const override { return listener_.port(); }

  Tier2ServerStats stats() const override {
    Tier2ServerStats s;
    s.open_connections = open_;
    s.refused_connections = refused_connections_;
    s.refused_frames = refused_frames_;
    s.inflight_bytes = inflight_;
    s.refused_handshakes = refused_handshakes_;
    return s;
  }

  void Stop() override {
    {
      std::lock_guard lock(mu_);
      if (stopped_) return;
      stopped_ = true;
    }
    listener_.Stop();
    work_.join();
    // No thread runs the io_contexts now: every connection closes, so a peer waiting for an
    // answer learns at once that none will come.
    boost::system::error_code ec;
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
  // An accepted connection: closed past max_connections, else served on its context, whose one
  // thread runs its reads, writes and timer.
  void Admit(tcp::socket socket, asio::io_context& home) {
    boost::system::error_code ec;
    if (open_.load() >= options_.max_connections) {
      ++refused_connections_;
      if (uint64_t skipped = 0; log_limit_.Allow(&skipped)) {
        spdlog::warn("tier2 server: {} connections open (tier2_server.max_connections): one more closed ({} like it "
                     "not logged)", open_.load(), skipped);
      }
      socket.close(ec);
      return;
    }
    socket.set_option(tcp::no_delay(true), ec);
    asio::co_spawn(home, Serve(std::move(socket)), asio::detached);
  }

  // One connection: frames in, answers out, in order. It runs on its context's one thread, where
  // its reads and writes race their timer.
  // Bytes of request bodies held, released on every way out.
  struct Inflight {
    std::atomic<uint64_t>& total;
    uint64_t bytes = 0;
    ~Inflight() { total -= bytes; }
    // Takes `n` more bytes if the total stays within `cap`.
    bool Take(uint64_t n, uint64_t cap) {
      uint64_t now = total.load();
      do {
        if (now + n > cap) return false;
      } while (!total.compare_exchange_weak(now, now + n));
      bytes += n;
      return true;
    }
    void Release() {
      total -= bytes;
      bytes = 0;
    }
  };

  // Logs a peer's misbehaviour, a few lines a second at most.
  template <typename... Args>
  void Warn(fmt::format_string<Args...> format, Args&&... args) {
    if (uint64_t skipped = 0; log_limit_.Allow(&skipped)) {
      std::string line = fmt::format(format, std::forward<Args>(args)...);
      if (skipped > 0) line += fmt::format(" ({} lines like it not logged)", skipped);
      spdlog::warn("tier2 server: {}", line);
    }
  }

  asio::awaitable<void> Serve(tcp::socket socket) {
    ++open_;
    struct Open {
      std::atomic<uint64_t>& n;
      ~Open() { --n; }
    } open{open_};
    std::string peer;
    boost::system::error_code ec;
    const auto remote = socket.remote_endpoint(ec);
    peer = ec ? std::string("?") : remote.address().to_string() + ":" + std::to_string(remote.port());
    if (tls_ == nullptr) {
      Registered registered(this, &socket);
      co_await ServeFrames(socket, peer);
      co_return;
    }
    // Mutual TLS: the handshake must end within the stall timeout, and the peer must present a
    // certificate of the cluster's CA (the context verifies it).
    asio::ssl::stream<tcp::socket> stream(std::move(socket), *tls_);
    Registered registered(this, &stream.next_layer());
    asio::steady_timer timer(co_await asio::this_coro::executor);
    timer.expires_after(std::chrono::milliseconds(options_.stall_timeout_ms));
    using namespace asio::experimental::awaitable_operators;
    const auto shook = co_await (stream.async_handshake(asio::ssl::stream_base::server, kTuple) || timer.async_wait(kTuple));
    if (shook.index() == 1 || std::get<0>(std::get<0>(shook))) {
      ++refused_handshakes_;
      Warn("{}: {}; closing the connection", peer,
           shook.index() == 1 ? std::string("no TLS handshake in time")
                              : "TLS handshake refused: " + std::get<0>(std::get<0>(shook)).message());
      co_return;
    }
    co_await ServeFrames(stream, peer);
  }

  // One connection's frames: in, answered, in order. It runs on its context's one thread, where
  // its reads and writes race their timer.
  template <typename Stream>
  asio::awaitable<void> ServeFrames(Stream& socket, const std::string& peer) {
    Inflight held{inflight_};
    asio::steady_timer timer(co_await asio::this_coro::executor);
    const auto stall = std::chrono::milliseconds(options_.stall_timeout_ms);
    const auto idle = std::chrono::milliseconds(options_.idle_timeout_ms);
    char header[kFrameHeaderBytes];
    FrameBuffer body;
    std::string out;
    for (;;) {
      // The next frame's first bytes may take as long as the connection may stay idle; the rest
      // of it must keep coming.
      size_t got = 0;
      while (got < kFrameHeaderBytes) {
        const Io r = co_await ReadSome(socket, timer, header + got, kFrameHeaderBytes - got, got == 0 ? idle : stall);
        if (r.timed_out && got == 0) spdlog::debug("tier2 server: {}: idle for {} ms; closing", peer, idle.count());
        if (r.timed_out && got > 0) {
          Warn("{}: {} bytes of a frame header, then nothing for {} ms; closing", peer, got,
                       stall.count());
        }
        if (!r.ok()) co_return;  // the peer closed, or was idle or stalled too long (or the server stops)
        got += r.bytes;
      }
      auto h = DecodeFrameHeader(header);
      if (!h.ok() || h->type != MessageType::kTier2Request) {
        ++refused_frames_;
        Warn("{}: {}; closing the connection", peer,
             h.ok() ? std::string("a frame that is not a request") : h.status().message());
        co_return;
      }
      if (h->length > options_.max_request_bytes) {
        ++refused_frames_;
        Warn("{}: a request of {} bytes is over tier2_server.max_request_bytes ({}); closing the connection", peer,
             h->length, options_.max_request_bytes);
        co_return;
      }
      if (!held.Take(h->length, options_.max_inflight_bytes)) {
        ++refused_frames_;
        Warn("{}: a request of {} bytes would pass tier2_server.max_inflight_bytes ({}, {} held); closing the "
             "connection", peer, h->length, options_.max_inflight_bytes, inflight_.load());
        co_return;
      }
      // The body's buffer is allocated at its length but not written (its pages become resident
      // only as the peer's bytes arrive, and the length is within the budget just taken): a
      // header alone does not make the server hold its length, and the body is never copied.
      char* const data = body.Reserve(h->length);
      got = 0;
      while (got < h->length) {
        const Io r = co_await ReadSome(socket, timer, data + got, h->length - got, stall);
        if (r.timed_out) {
          Warn("{}: {} of a frame's {} bytes, then nothing for {} ms; closing", peer, got,
                       h->length, stall.count());
        }
        if (!r.ok()) co_return;
        got += r.bytes;
      }
      pb::Tier2Request request;
      if (Status s = DecodeFrameBody(*h, std::string_view(data, h->length), &request); !s.ok()) {
        ++refused_frames_;
        Warn("{}: {}; closing the connection", peer, s.message());
        co_return;
      }
      // A read that answers at once (a signature, stats) is served on this thread; the work on the
      // work pool, and this coroutine resumes on its connection's executor.
      // (Not a conditional expression around co_await: g++ 12 miscompiles that.)
      pb::Tier2Response response;
      if (std::optional<pb::Tier2Response> read = service_.TryHandleRead(request); read.has_value()) {
        response = std::move(*read);
      } else {
        response = co_await asio::co_spawn(
            work_,
            [this, &request]() -> asio::awaitable<pb::Tier2Response> { co_return service_.Handle(std::move(request)); },
            asio::use_awaitable);
      }
      out.clear();
      if (Status s = EncodeFrame(MessageType::kTier2Response, response, &out, h->version); !s.ok()) {
        pb::Tier2Response refused;
        refused.set_id(response.id());
        refused.set_code(static_cast<uint32_t>(s.code()));
        refused.set_message(s.message());
        out.clear();
        (void)EncodeFrame(MessageType::kTier2Response, refused, &out, h->version);
      }
      for (size_t sent = 0; sent < out.size();) {
        const Io r = co_await WriteSome(socket, timer, out.data() + sent, out.size() - sent, stall);
        if (r.timed_out) Warn("{}: the answer not taken for {} ms; closing", peer, stall.count());
        if (!r.ok()) co_return;
        sent += r.bytes;
      }
      // A connection idle between frames keeps no large buffer, and holds none of the budget.
      body.Trim();
      if (out.capacity() > kKeptBufferBytes) {
        const size_t bytes = out.capacity();
        std::string().swap(out);
        ReturnFreeMemory(bytes);
      }
      held.Release();
    }
  }

  static constexpr size_t kKeptBufferBytes = size_t{1} << 20;

  // A connection's buffer for request bodies: one allocation at the frame's length (uninitialised,
  // so untouched pages stay out of the process's resident memory), kept between frames up to
  // kKeptBufferBytes; a larger one is freed after its frame (or with the connection) and its
  // memory given back to the system, so that a burst of large frames does not stay resident.
  class FrameBuffer {
   public:
    FrameBuffer() = default;
    FrameBuffer(const FrameBuffer&) = delete;
    FrameBuffer& operator=(const FrameBuffer&) = delete;
    ~FrameBuffer() { Free(); }
    char* Reserve(size_t n) {
      if (n > capacity_) {
        Free();
        data_ = std::make_unique_for_overwrite<char[]>(n);
        capacity_ = n;
      }
      return data_.get();
    }
    void Trim() {
      if (capacity_ > kKeptBufferBytes) Free();
    }

   private:
    void Free() {
      const size_t bytes = capacity_;
      data_.reset();
      capacity_ = 0;
      if (bytes > kKeptBufferBytes) ReturnFreeMemory(bytes);
    }
    std::unique_ptr<char[]> data_;
    size_t capacity_ = 0;
  };

  // What one read or write with a timeout did.
  struct Io {
    size_t bytes = 0;
    bool failed = false;     // the peer closed, or the socket failed
    bool timed_out = false;  // nothing moved in time
    bool ok() const { return !failed && !timed_out; }
  };

  static Io Result(const std::variant<std::tuple<boost::system::error_code, size_t>,
                                      std::tuple<boost::system::error_code>>& r) {
    Io io;
    if (r.index() == 1) {
      io.timed_out = true;
    } else {
      const auto& [ec, n] = std::get<0>(r);
      io.failed = static_cast<bool>(ec);
      io.bytes = n;
    }
    return io;
  }

  // Some bytes into [data, data + size), or nothing moved within `timeout`.
  template <typename Stream>
  static asio::awaitable<Io> ReadSome(Stream& socket, asio::steady_timer& timer, char* data, size_t size,
                                      std::chrono::milliseconds timeout) {
    using namespace asio::experimental::awaitable_operators;
    timer.expires_after(timeout);
    co_return Result(co_await (socket.async_read_some(asio::buffer(data, size), kTuple) || timer.async_wait(kTuple)));
  }
  template <typename Stream>
  static asio::awaitable<Io> WriteSome(Stream& socket, asio::steady_timer& timer, const char* data, size_t size,
                                       std::chrono::milliseconds timeout) {
    using namespace asio::experimental::awaitable_operators;
    timer.expires_after(timeout);
    co_return Result(co_await (socket.async_write_some(asio::buffer(data, size), kTuple) || timer.async_wait(kTuple)));
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

  // Declared before listener_: the connections' coroutines, destroyed with its pool, unregister here.
  std::mutex connections_mu_;
  std::set<tcp::socket*> connections_;  // guarded by connections_mu_
  const Tier2ServerOptions options_;
  Tier2Service service_;
  TcpListener listener_;
  asio::thread_pool work_;
  std::atomic<uint64_t> open_{0}, refused_connections_{0}, refused_frames_{0}, inflight_{0}, refused_handshakes_{0};
  std::shared_ptr<asio::ssl::context> tls_;  // null: plain TCP
  LogLimit log_limit_{5};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;  // guarded by mu_
};

}  // namespace

StatusOr<std::unique_ptr<Tier2Server>> Tier2Server::Start(const Tier2ServerOptions& options) {
  if (options.io_threads < 1 || options.work_threads < 1) {
    return InvalidArgument("tier2 server: io_threads and work_threads must be at least 1");
  }
  if (options.stall_timeout_ms == 0 || options.idle_timeout_ms == 0) {
    return InvalidArgument("tier2 server: stall_timeout_ms and idle_timeout_ms must be at least 1");
  }
  if (options.store.empty()) return InvalidArgument("tier2 server: no store directory");
  if (options.max_connections == 0 || options.max_request_bytes == 0 ||
      options.max_inflight_bytes < options.max_request_bytes) {
    return InvalidArgument("tier2 server: max_connections and max_request_bytes must be at least 1, and "
                           "max_inflight_bytes at least max_request_bytes");
  }
  auto server = std::make_unique<Tier2ServerImpl>(options);
  RETURN_IF_ERROR(server->Listen());
  return std::unique_ptr<Tier2Server>(std::move(server));
}

}  // namespace neardup::cluster
