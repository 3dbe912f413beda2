// The servers' network plumbing: host:port parsing, listening, and IoContextPool, their network
// threads: one io_context per thread (one per core when sized so). A connection is given to one context (round robin) and lives there: its reads, writes and
// timers run on that context's single thread, so it needs no strand, and the contexts share no
// scheduler lock. The acceptor lives on the first context.
//
//   IoContextPool pool(2);
//   tcp::acceptor acceptor(pool.context(0));
//   RETURN_IF_ERROR(ListenOn(acceptor, "127.0.0.1:0", "http server"));
//   co_spawn(pool.context(0), Accept(), detached);      // accepts onto pool.next()
//   pool.Run("nd-http");                                // threads nd-http-0, nd-http-1
//   ...
//   pool.Stop();                                        // stops every context, joins the threads
//
// Thread safety: the constructor, Run and Stop from one thread; next() and context() from any
// (next() is a relaxed atomic counter).
//
// TcpListener is the skeleton every server here shares (the HTTP server, the Tier 2 server, the
// fault proxy): the pool, the acceptor, the accept loop and the stop; each server brings what it
// does with a connection.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "common/status.h"

namespace neardup::cluster {

class IoContextPool {
 public:
  // `threads` contexts (at least 1), not yet run.
  explicit IoContextPool(int threads);
  // Stop().
  ~IoContextPool();
  IoContextPool(const IoContextPool&) = delete;
  IoContextPool& operator=(const IoContextPool&) = delete;

  size_t size() const { return contexts_.size(); }
  boost::asio::io_context& context(size_t i) { return *contexts_[i]; }
  // The context for the next connection, round robin.
  boost::asio::io_context& next();

  // One thread per context, named `<name>-<i>`; each runs until Stop() (a work guard keeps a
  // context with nothing to do alive).
  void Run(const std::string& name);
  // Stops every context (handlers in flight are abandoned) and joins the threads. Idempotent.
  void Stop();

 private:
  std::vector<std::unique_ptr<boost::asio::io_context>> contexts_;
  std::vector<std::thread> threads_;
  std::atomic<size_t> next_{0};
  bool stopped_ = false;
};

// Splits "host:port" (an IPv6 host may be bracketed: [::1]:80). InvalidArgument naming the text
// when it is not host:port or the port is not a number in 0..65535.
Status ParseHostPort(const std::string& text, std::string* host, uint16_t* port);
// Whether a host (as ParseHostPort gives it) is this machine's loopback: a server listening
// anywhere else requires a bearer token for writes.
bool IsLoopbackHost(const std::string& host);

// Opens, binds (SO_REUSEADDR) and listens `acceptor` on `listen` (host:port, port 0: a free one).
// InvalidArgument for a malformed address or a host that is not an IP address; IoError when it
// cannot bind or listen. `who` names the server in the message.
Status ListenOn(boost::asio::ip::tcp::acceptor& acceptor, const std::string& listen, const std::string& who);

// A TCP server's skeleton: an IoContextPool of `io_threads` contexts, an acceptor on the first,
// and the loop that accepts each connection onto the next context (round robin) and hands it to
// `on_accept` with that context, where the connection then lives (the server starts its coroutine
// there). A failed accept is logged ("<who>: accept: ...", a few lines a second at most) and the
// loop goes on; Stop ends it.
//
//   TcpListener listener(2);
//   RETURN_IF_ERROR(listener.Start("127.0.0.1:0", "http server", "nd-http",
//       [this](tcp::socket s, asio::io_context& home) { co_spawn(home, Serve(std::move(s)), detached); }));
//   ...
//   listener.Stop();   // the contexts stopped, their threads joined, the acceptor closed
//
// Thread safety: Start and Stop from one thread (Stop is idempotent, and the destructor calls it);
// on_accept runs on the first context's thread; port() and pool() from any thread after Start.
// Declare a listener after what its connections' coroutines use: their frames go with its pool.
class TcpListener {
 public:
  using OnAccept = std::function<void(boost::asio::ip::tcp::socket socket, boost::asio::io_context& home)>;

  explicit TcpListener(int io_threads);
  ~TcpListener();
  TcpListener(const TcpListener&) = delete;
  TcpListener& operator=(const TcpListener&) = delete;

  // Listens on `listen` (ListenOn's errors, naming `who`), starts accepting and runs the pool's
  // threads, named `<thread_name>-<i>`.
  Status Start(const std::string& listen, const std::string& who, const std::string& thread_name, OnAccept on_accept);
  uint16_t port() const { return port_; }
  IoContextPool& pool() { return io_; }
  // Stops the contexts (handlers in flight are abandoned), joins their threads and closes the
  // acceptor. No thread runs the contexts afterwards: the server may close its connections.
  void Stop();

 private:
  IoContextPool io_;
  boost::asio::ip::tcp::acceptor acceptor_;  // on io_'s first context
  OnAccept on_accept_;
  std::string who_;
  uint16_t port_ = 0;
  bool stopped_ = false;
};

}  // namespace neardup::cluster
