// HttpServer: HTTP/1.1 on Boost.Beast, for the crawlers' API (cluster/api/http_api.h). Keep-alive;
// limits on a request's header and body, on the time to read a whole request (a client that
// opens a connection and never finishes a request is cut off), and on open connections. Network
// I/O runs on `io_threads` threads, each with an io_context of its own that a connection stays on
// (cluster/http/net.h); a handler that has heavy work moves it to a pool of its own (co_await on
// another executor) and comes back.
//
//   HttpServerOptions o;  o.listen = "127.0.0.1:0";
//   ASSIGN_OR_RETURN(auto server, HttpServer::Start(o, [&](HttpRequest& req) -> asio::awaitable<HttpResponse> {...}));
//   server->port();  server->Stop();
//
// With `tls` (cluster/http/tls.h MakeHttpsServerContext) it speaks HTTPS only: the TLS handshake is part
// of the first request's read_timeout, and a client that fails it is closed (counted).
//
// Bad requests are answered by the server itself, and the connection closed: malformed HTTP 400,
// a header over its limit 431, a body over its limit 413, past max_connections 503 (over TLS:
// closed before the handshake, the work the limit saves). A request not
// read within the time (or a connection idle past idle_timeout_ms) is cut off: the connection is
// closed without an answer. A handler that throws is answered 500 and the connection closed; the
// exception is logged (at most one line a second) and the connection's slot released, as on every
// other way out of a connection.
//
// Thread safety: Start, port and Stop from one thread; the handler runs on the I/O threads, for
// several connections at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/http.hpp>

#include "common/status.h"

namespace google::protobuf {
class Message;
}

namespace neardup::cluster {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;
using HttpHandler = std::function<boost::asio::awaitable<HttpResponse>(HttpRequest& request)>;

// What the server does with a request once its header is in, before any of its body is read: a
// writer without its token is refused before it can make the server hold 32 MiB, and a route that
// takes small bodies says so.
struct HeaderVerdict {
  std::optional<HttpResponse> refuse;  // answered at once; the body is not read and the connection closes
  uint64_t max_body_bytes = 0;         // 0: the server's max_body_bytes; else the lower of the two (413 past it)
};
using HttpHeaderCheck = std::function<HeaderVerdict(const HttpRequest& header)>;

struct HttpServerOptions {
  std::string listen = "127.0.0.1:0";  // host:port; port 0 picks a free one
  int io_threads = 1;
  uint32_t max_header_bytes = 16384;
  uint64_t max_body_bytes = uint64_t{32} << 20;
  uint32_t read_timeout_ms = 10000;  // from a request's first byte (or the connection's idle start) to its end
  uint32_t idle_timeout_ms = 10000;  // a kept-alive connection with no request for this long closes
  uint32_t max_connections = 1024;
  std::shared_ptr<boost::asio::ssl::context> tls;  // null: plain HTTP; else HTTPS only (shared, read-only)
};

struct HttpServerStats {
  uint64_t connections = 0, open_connections = 0, requests = 0;
  uint64_t bad_requests = 0, timeouts = 0, refused_connections = 0;
  uint64_t handler_errors = 0;    // handlers that threw (answered 500)
  uint64_t refused_requests = 0;  // refused by the header check, their body unread
  uint64_t tls_failures = 0;      // connections that did not complete the TLS handshake
};

class HttpServer {
 public:
  // Binds and starts serving. `check` (may be empty) sees each request's header before its body
  // is read. InvalidArgument for a bad address; IoError when it cannot bind.
  static StatusOr<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options, HttpHandler handler,
                                                     HttpHeaderCheck check = {});
  virtual ~HttpServer() = default;
  virtual uint16_t port() const = 0;
  virtual HttpServerStats stats() const = 0;
  // Stops accepting and closes every connection; a handler in flight is abandoned.
  virtual void Stop() = 0;
};

// A response with a JSON body (and the request's HTTP version and keep-alive).
HttpResponse JsonResponse(const HttpRequest& request, unsigned status, std::string body);
// `m` as JSON with the API's options: field names as in the .proto, every field even when zero.
std::string ApiJson(const google::protobuf::Message& m);
// An error reply (pb::ErrorReply as JSON: {"error":what,"line":"N"}; line 0 when no line of the
// body is at fault).
HttpResponse JsonError(const HttpRequest& request, unsigned status, const std::string& what, uint64_t line = 0);

// Whether the request presents `Authorization: Bearer <token>` (compared in constant time in the
// token). An empty token: every request is.
bool BearerAuthorized(const HttpRequest& request, std::string_view token);

}  // namespace neardup::cluster
