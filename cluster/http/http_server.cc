#include "cluster/http/http_server.h"

#include <atomic>
#include <mutex>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <google/protobuf/util/json_util.h>
#include <spdlog/spdlog.h>

#include "cluster/http/net.h"
#include "common/utf8.h"
#include "proto/api.pb.h"

namespace neardup::cluster {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

class HttpServerImpl final : public HttpServer {
 public:
  HttpServerImpl(HttpServerOptions o, HttpHandler handler, HttpHeaderCheck check)
      : options_(std::move(o)),
        handler_(std::move(handler)),
        check_(std::move(check)),
        listener_(options_.io_threads) {}
  ~HttpServerImpl() override { Stop(); }

  Status Listen() {
    // The connection lives on one context: its one thread runs the connection's reads, writes
    // and timer, and the handler (which moves heavy work to a pool of its own and comes back).
    return listener_.Start(options_.listen, "http server", "nd-http", [this](tcp::socket socket, asio::io_context& home) {
      ++connections_;
      // Serve catches what its handler throws; anything else that escapes it is logged here (its
      // slot is released by Serve's guard either way).
      asio::co_spawn(home, Serve(std::move(socket)), [this](std::exception_ptr e) {
        if (e) NoteException(e, "connection");
      });
    });
  }

  uint16_t port() const override { return listener_.port(); }

  HttpServerStats stats() const override {
    HttpServerStats s;
    s.connections = connections_;
    s.open_connections = open_;
    s.requests = requests_;
    s.bad_requests = bad_;
    s.timeouts = timeouts_;
    s.refused_connections = refused_;
    s.handler_errors = handler_errors_;
    s.refused_requests = refused_early_;
    s.tls_failures = tls_failures_;
    return s;
  }

  void Stop() override {
    if (stopped_.exchange(true)) return;
    listener_.Stop();
  }

 private:
  // Logs an exception that left a handler or a connection, at most one line a second (a client
  // that can trigger one must not flood the log).
  void NoteException(std::exception_ptr e, const char* where) {
    ++handler_errors_;
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      what = x.what();
    } catch (...) {
    }
    const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::steady_clock::now().time_since_epoch()).count();
    int64_t last = last_exception_log_s_.load();
    if (now != last && last_exception_log_s_.compare_exchange_strong(last, now)) {
      spdlog::error("http server: a {} threw: {} ({} so far)", where, what, handler_errors_.load());
    }
  }

  // One open connection's slot, released on every way out of Serve (return or exception).
  struct OpenSlot {
    std::atomic<uint64_t>& open;
    ~OpenSlot() { --open; }
  };

  asio::awaitable<void> Serve(tcp::socket socket) {
    const bool over = open_.fetch_add(1) >= options_.max_connections;
    const OpenSlot slot{open_};
    boost::system::error_code ec;
    if (options_.tls == nullptr) {
      beast::tcp_stream stream(std::move(socket));
      if (over) {
        ++refused_;
        HttpRequest none;
        none.version(11);
        HttpResponse r = JsonResponse(none, 503, R"({"error":"too many connections"})");
        r.keep_alive(false);
        r.prepare_payload();
        stream.expires_after(std::chrono::seconds(1));
        co_await http::async_write(stream, r, asio::redirect_error(asio::use_awaitable, ec));
      } else {
        co_await Exchange(stream);
      }
      stream.socket().shutdown(tcp::socket::shutdown_send, ec);
      co_return;
    }
    if (over) {
      // Over TLS, closed before the handshake: the handshake is the work the limit saves.
      ++refused_;
      socket.close(ec);
      co_return;
    }
    beast::ssl_stream<beast::tcp_stream> stream(std::move(socket), *options_.tls);
    // The handshake is part of the first request's time.
    beast::get_lowest_layer(stream).expires_after(std::chrono::milliseconds(options_.read_timeout_ms));
    co_await stream.async_handshake(asio::ssl::stream_base::server, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      ++tls_failures_;
      co_return;
    }
    co_await Exchange(stream);
    // close_notify, and the client's, within a second (a client that just closes ends it at once).
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(1));
    co_await stream.async_shutdown(asio::redirect_error(asio::use_awaitable, ec));
  }

  // The requests of one connection, in turn, until it closes, errs or times out.
  template <typename Stream>
  asio::awaitable<void> Exchange(Stream& stream) {
    // Beast reads at most the buffer's free room (and 64 KB): with the few hundred bytes a
    // request's header leaves, a large body came in thousands of small reads, each a system call
    // and a timer (5 MB took 1.8 s). Room for 64 KB per connection reads it in 0.2 s.
    beast::flat_buffer buffer;
    buffer.reserve(64 << 10);
    bool first = true;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(options_.max_header_bytes);
      parser.body_limit(options_.max_body_bytes);
      boost::system::error_code ec;
      // A connection idles between requests (keep-alive) for idle_timeout; once a request's
      // first bytes are in, it has read_timeout for the whole of it. The header first: the check
      // sees it before any of the body is read.
      uint64_t body_limit = options_.max_body_bytes;
      beast::get_lowest_layer(stream).expires_after(std::chrono::milliseconds(
          buffer.size() > 0 || first ? options_.read_timeout_ms : options_.idle_timeout_ms));
      co_await http::async_read_header(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
      if (!ec && check_) {
        HeaderVerdict v = check_(parser.get());
        if (v.refuse.has_value()) {
          ++refused_early_;
          HttpResponse r = std::move(*v.refuse);
          r.keep_alive(false);
          r.prepare_payload();
          beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(2));
          co_await http::async_write(stream, r, asio::redirect_error(asio::use_awaitable, ec));
          break;
        }
        if (v.max_body_bytes > 0 && v.max_body_bytes < body_limit) {
          body_limit = v.max_body_bytes;
          parser.body_limit(body_limit);
          // The parser checked a declared length against the limit it had when the header came:
          // against the route's now (a chunked body is checked as it comes).
          if (parser.content_length().value_or(0) > body_limit) ec = http::error::body_limit;
        }
      }
      if (!ec) {
        beast::get_lowest_layer(stream).expires_after(std::chrono::milliseconds(options_.read_timeout_ms));
        co_await http::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
      }
      first = false;
      if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
          ec == asio::ssl::error::stream_truncated) {
        break;  // the client closed (over TLS, possibly without a close_notify)
      }
      if (ec) {
        unsigned code = 400;
        std::string what = ec.message();
        if (ec == beast::error::timeout) {
          ++timeouts_;  // the stream closed the socket: nothing can be answered
          break;
        }
        if (ec == http::error::header_limit) {
          code = 431;
          what = "header over " + std::to_string(options_.max_header_bytes) + " bytes";
        } else if (ec == http::error::body_limit) {
          code = 413;
          what = "body over " + std::to_string(body_limit) + " bytes";
        }
        ++bad_;
        HttpRequest none;
        none.version(11);
        HttpResponse r = JsonResponse(none, code, "{\"error\":\"" + what + "\"}");
        r.keep_alive(false);
        r.prepare_payload();
        beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(2));
        co_await http::async_write(stream, r, asio::redirect_error(asio::use_awaitable, ec));
        break;
      }
      HttpRequest request = parser.release();
      ++requests_;
      HttpResponse response;
      std::exception_ptr thrown;
      try {
        response = co_await handler_(request);
      } catch (...) {
        thrown = std::current_exception();
      }
      if (thrown) {
        NoteException(thrown, "handler");
        response = JsonResponse(request, 500, R"({"error":"internal error"})");
        response.keep_alive(false);
      }
      const bool keep = request.keep_alive() && response.keep_alive();
      response.keep_alive(keep);
      response.prepare_payload();
      beast::get_lowest_layer(stream).expires_after(std::chrono::milliseconds(options_.read_timeout_ms));
      co_await http::async_write(stream, response, asio::redirect_error(asio::use_awaitable, ec));
      if (ec || !keep) break;
    }
  }

  const HttpServerOptions options_;
  const HttpHandler handler_;
  const HttpHeaderCheck check_;
  TcpListener listener_;
  std::atomic<bool> stopped_{false};
  std::atomic<uint64_t> connections_{0}, open_{0}, requests_{0}, bad_{0}, timeouts_{0}, refused_{0};
  std::atomic<uint64_t> handler_errors_{0}, refused_early_{0}, tls_failures_{0};
  std::atomic<int64_t> last_exception_log_s_{0};
};

}  // namespace

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options, HttpHandler handler,
                                                         HttpHeaderCheck check) {
  if (options.io_threads < 1) return InvalidArgument("http server: io_threads must be at least 1");
  auto server = std::make_unique<HttpServerImpl>(options, std::move(handler), std::move(check));
  RETURN_IF_ERROR(server->Listen());
  return std::unique_ptr<HttpServer>(std::move(server));
}

HttpResponse JsonResponse(const HttpRequest& request, unsigned status, std::string body) {
  HttpResponse r{static_cast<http::status>(status), request.version()};
  r.set(http::field::server, "neardup");
  r.set(http::field::content_type, "application/json");
  r.keep_alive(request.keep_alive());
  if (!body.empty() && body.back() != '\n') body += '\n';
  r.body() = std::move(body);
  return r;
}

std::string ApiJson(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

HttpResponse JsonError(const HttpRequest& request, unsigned status, const std::string& what, uint64_t line) {
  pb::ErrorReply e;
  // An error may quote what a client sent (a Host header, an id): valid UTF-8 whatever it was, or
  // the JSON printer gives up on the whole answer.
  if (IsValidUtf8(what)) {
    e.set_error(what);
  } else {
    AppendRepairedUtf8(what, e.mutable_error());
  }
  e.set_line(line);
  return JsonResponse(request, status, ApiJson(e));
}

bool BearerAuthorized(const HttpRequest& request, std::string_view token) {
  if (token.empty()) return true;
  const auto it = request.find(http::field::authorization);
  if (it == request.end()) return false;
  const std::string_view given(it->value().data(), it->value().size());
  const std::string expected = "Bearer " + std::string(token);
  // Constant time in the token: every byte is compared whatever the first difference.
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    diff |= static_cast<unsigned char>(expected[i] ^ (i < given.size() ? given[i] : 0));
  }
  return diff == 0;
}

}  // namespace neardup::cluster
