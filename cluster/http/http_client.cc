#include "cluster/http/http_client.h"

#include <cctype>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "cluster/http/net.h"
#include "cluster/http/tls.h"

namespace neardup::cluster {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

class BeastClient final : public HttpClient {
 public:
  BeastClient(std::string host, uint16_t port, std::chrono::milliseconds timeout,
              std::shared_ptr<asio::ssl::context> tls)
      : host_(std::move(host)), port_(port), timeout_(timeout), tls_(std::move(tls)), plain_(io_) {}

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
  using TlsStream = beast::ssl_stream<beast::tcp_stream>;

  beast::tcp_stream& Lowest() { return secure_ ? beast::get_lowest_layer(*secure_) : plain_; }

  // Runs the io_context until the operation started completes.
  void RunIo() {
    io_.restart();
    io_.run();
  }

  Status Connect() {
    beast::error_code ec;
    tcp::resolver resolver(io_);
    // The name resolved is the bare one: a bracketed IPv6 literal without its brackets.
    const std::string name = host_.size() > 2 && host_.front() == '[' && host_.back() == ']'
                                 ? host_.substr(1, host_.size() - 2)
                                 : host_;
    auto endpoints = resolver.resolve(name, std::to_string(port_), ec);
    if (ec) return Unavailable("cannot resolve " + host_ + ": " + ec.message());
    if (tls_ != nullptr) {
      secure_ = std::make_unique<TlsStream>(io_, *tls_);
    }
    Lowest().expires_after(timeout_);
    Lowest().connect(endpoints, ec);
    if (ec) return Unavailable("cannot connect to " + host_ + ":" + std::to_string(port_) + ": " + ec.message());
    Lowest().socket().set_option(tcp::no_delay(true), ec);
    if (secure_ != nullptr) {
      SSL* ssl = secure_->native_handle();
      beast::error_code addr_ec;
      asio::ip::make_address(name, addr_ec);
      // SNI for a DNS name (never for an address), and the name the certificate must carry.
      if (addr_ec && SSL_set_tlsext_host_name(ssl, name.c_str()) != 1) {
        return Internal("https: cannot set the server name " + name);
      }
      secure_->set_verify_callback(asio::ssl::host_name_verification(name), ec);
      if (ec) return Internal("https: " + ec.message());
      secure_->async_handshake(asio::ssl::stream_base::client, [&](beast::error_code e) { ec = e; });
      RunIo();
      if (ec) {
        // Why, read before Close() frees the connection's SSL object.
        std::string why = ec.message();
        if (const long v = SSL_get_verify_result(ssl); v != X509_V_OK) why = X509_verify_cert_error_string(v);
        Close();
        if (ec == beast::error::timeout) return DeadlineExceeded("https: no TLS handshake within the timeout");
        return Unavailable("https: the TLS handshake with " + host_ + ":" + std::to_string(port_) + " failed: " + why);
      }
    }
    connected_ = true;
    return Status::Ok();
  }

  template <typename Stream>
  StatusOr<Reply> Exchange(Stream& stream, const http::request<http::string_body>& req) {
    beast::error_code ec;
    // The asynchronous forms, run to completion here, so that the stream's expiry bounds each call.
    Lowest().expires_after(timeout_);
    http::async_write(stream, req, [&](beast::error_code e, size_t) { ec = e; });
    RunIo();
    // A server may answer before it has read the body (401 on the header, 413 on the length) and
    // close: the write then fails, but its answer is there to read. Read it; only a connection
    // that holds no answer is the write's failure.
    const beast::error_code write_ec = ec;
    if (write_ec == beast::error::timeout) return Fail(write_ec);
    http::response_parser<http::string_body> parser;
    parser.body_limit(uint64_t{1} << 30);
    buffer_.clear();
    http::async_read(stream, buffer_, parser, [&](beast::error_code e, size_t) { ec = e; });
    RunIo();
    if (ec) return Fail(write_ec ? write_ec : ec);
    auto res = parser.release();
    Reply out;
    out.status = res.result_int();
    out.body = std::move(res.body());
    for (const auto& f : res) {
      std::string field(f.name_string());
      for (char& c : field) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out.headers[field] = std::string(f.value());
    }
    if (!res.keep_alive() || write_ec) Close();
    return out;
  }

  StatusOr<Reply> Once(const std::string& method, const std::string& target, const std::string& body,
                       const std::map<std::string, std::string>& headers) {
    if (!connected_) RETURN_IF_ERROR(Connect());
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, host_);
    req.set(http::field::user_agent, "neardup");
    for (const auto& [k, v] : headers) req.set(k, v);
    req.body() = body;
    req.keep_alive(true);
    req.prepare_payload();
    return secure_ != nullptr ? Exchange(*secure_, req) : Exchange(plain_, req);
  }

  Status Fail(const beast::error_code& ec) {
    Close();
    if (ec == beast::error::timeout) return DeadlineExceeded("http: no answer within the timeout");
    return Unavailable("http: " + ec.message());
  }

  // Closes the connection (without a TLS close_notify: nothing more is read from it).
  void Close() {
    beast::error_code ignored;
    Lowest().socket().close(ignored);
    secure_.reset();
    connected_ = false;
  }

  const std::string host_;  // as in the URL (an IPv6 literal in brackets): the Host header
  const uint16_t port_;
  const std::chrono::milliseconds timeout_;
  const std::shared_ptr<asio::ssl::context> tls_;  // null: plain HTTP
  asio::io_context io_;
  beast::tcp_stream plain_;
  std::unique_ptr<TlsStream> secure_;  // the connection's TLS stream (a new one per connection)
  beast::flat_buffer buffer_;
  bool connected_ = false;
};

}  // namespace

StatusOr<std::unique_ptr<HttpClient>> HttpClient::Create(const std::string& base_url, const HttpClientOptions& options) {
  std::string rest = base_url;
  bool secure = false;
  if (rest.rfind("http://", 0) == 0) {
    rest = rest.substr(7);
  } else if (rest.rfind("https://", 0) == 0) {
    rest = rest.substr(8);
    secure = true;
  } else if (rest.find("://") != std::string::npos) {
    return InvalidArgument("server URL " + base_url + ": only http:// and https:// are spoken");
  }
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  std::string host;
  uint16_t port = 0;
  RETURN_IF_ERROR(ParseHostPort(rest, &host, &port));
  std::shared_ptr<asio::ssl::context> tls;
  if (secure) {
    ASSIGN_OR_RETURN(tls, MakeHttpsClientContext(options.ca_file));
  } else if (!options.ca_file.empty()) {
    return InvalidArgument("server URL " + base_url + ": a CA file is given but the URL is not https://");
  }
  // The Host header and the name checked keep an IPv6 literal's brackets off the name itself.
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return std::unique_ptr<HttpClient>(new BeastClient(host, port, options.timeout, std::move(tls)));
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
