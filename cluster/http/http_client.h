// HttpClient: a blocking HTTP/1.1 client with one kept-alive connection (Boost.Beast), for the
// command-line clients (neardup ingest, neardup status), the benchmarks and the tests.
//
//   ASSIGN_OR_RETURN(auto client, HttpClient::Create("http://127.0.0.1:8080"));
//   ASSIGN_OR_RETURN(HttpClient::Reply r, client->Request("GET", "/v1/status?url=...", ""));
//
// https:// URLs speak TLS: the server's certificate must be signed by options.ca_file (or, without
// one, by a CA the system trusts) and name the host asked for (DNS name or IP address).
//
// A request on a connection the server closed is sent again once on a new connection. Errors:
// InvalidArgument for a URL that is not http(s)://host:port[/] or an unreadable CA file;
// Unavailable when the server cannot be reached, the connection fails or the server's certificate
// is refused; DeadlineExceeded past the timeout.
//
// Thread safety: one thread at a time per client.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "common/status.h"

namespace neardup::cluster {

struct HttpClientOptions {
  std::chrono::milliseconds timeout = std::chrono::seconds(30);  // per call: connect, handshake, write, read
  std::string ca_file = "";  // https: the CA the server's certificate is verified against; empty: the system's
};

class HttpClient {
 public:
  struct Reply {
    unsigned status = 0;
    std::string body;
    std::map<std::string, std::string> headers;  // lower-case names
  };
  static StatusOr<std::unique_ptr<HttpClient>> Create(const std::string& base_url, const HttpClientOptions& options = {});
  virtual ~HttpClient() = default;
  // `headers`: extra "Name: value" lines' pairs, e.g. {{"Authorization", "Bearer x"}}.
  virtual StatusOr<Reply> Request(const std::string& method, const std::string& target, const std::string& body,
                                  const std::map<std::string, std::string>& headers = {}) = 0;
};

// Percent-encodes a query parameter's value.
std::string UrlEncode(std::string_view s);

}  // namespace neardup::cluster
