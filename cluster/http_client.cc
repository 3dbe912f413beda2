#include "cluster/http_client.h"

#include <cctype>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "cluster/net.h"

namespace neardup::cluster {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

class BeastClient final : public HttpClient {
 public:
  BeastClient(std::string host, uint16_t port, std::chrono::milliseconds timeout)
      : host_(std::move(host)), port_(port), timeout_(timeout), stream_(io_) {}

  StatusOr<Reply> Request(const std::string& method, const std::string& target, const std::string& body,
                          const std::map<std::string, std::string>& headers) override {
    for (int attempt = 0;; ++attempt) {
      const bool fresh = !connected_;
      StatusOr<Reply> r = Once(method, target, body, headers);
      if (r.ok() || attempt > 0 || fresh || r.status().code() == StatusCode::kDeadlineExceeded) return r;
      // The server may have closed a kept-alive connection: once more on a new one.
    }
  }

 private:
  StatusOr<Reply> Once(const std::string& method, const std::string& target, const std::string& body,
                       const std::map<std::string, std::string>& headers) {
    beast::error_code ec;
    if (!connected_) {
      tcp::resolver resolver(io_);
      auto endpoints = resolver.resolve(host_, std::to_string(port_), ec);
      if (ec) return Unavailable("cannot resolve " + host_ + ": " + ec.message());
      stream_.expires_after(timeout_);
      stream_.connect(endpoints, ec);
      if (ec) return Unavailable("cannot connect to " + host_ + ":" + std::to_string(port_) + ": " + ec.message());
      stream_.socket().set_option(tcp::no_delay(true), ec);
      connected_ = true;
    }
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, host_);
    req.set(http::field::user_agent, "neardup");
    for (const auto& [k, v] : headers) req.set(k, v);
    req.body() = body;
    req.keep_alive(true);
    req.prepare_payload();
    // The asynchronous forms, run to completion here, so that the stream's expiry bounds each call.
    stream_.expires_after(timeout_);
    http::async_write(stream_, req, [&](beast::error_code e, size_t) { ec = e; });
    io_.restart();
    io_.run();
    if (ec) return Fail(ec);
    http::response_parser<http::string_body> parser;
    parser.body_limit(uint64_t{1} << 30);
    buffer_.clear();
    http::async_read(stream_, buffer_, parser, [&](beast::error_code e, size_t) { ec = e; });
    io_.restart();
    io_.run();
    if (ec) return Fail(ec);
    auto res = parser.release();
    Reply out;
    out.status = res.result_int();
    out.body = std::move(res.body());
    for (const auto& f : res) {
      std::string name(f.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out.headers[name] = std::string(f.value());
    }
    if (!res.keep_alive()) Close();
    return out;
  }

  Status Fail(const beast::error_code& ec) {
    Close();
    if (ec == beast::error::timeout) return DeadlineExceeded("http: no answer within the timeout");
    return Unavailable("http: " + ec.message());
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().close(ignored);
    connected_ = false;
  }

  const std::string host_;
  const uint16_t port_;
  const std::chrono::milliseconds timeout_;
  asio::io_context io_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  bool connected_ = false;
};

}  // namespace

StatusOr<std::unique_ptr<HttpClient>> HttpClient::Create(const std::string& base_url, std::chrono::milliseconds timeout) {
  std::string rest = base_url;
  if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
  else if (rest.find("://") != std::string::npos) return InvalidArgument("server URL " + base_url + ": only http:// is spoken (put TLS in a reverse proxy)");
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  std::string host;
  uint16_t port = 0;
  RETURN_IF_ERROR(ParseHostPort(rest, &host, &port));
  return std::unique_ptr<HttpClient>(new BeastClient(host, port, timeout));
}

std::string UrlEncode(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace neardup::cluster
