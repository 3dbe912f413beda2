// Who may do what on the HTTP API, decided from a request's header alone, before its body is
// read (cluster/http/http_server.h's HeaderVerdict): a writer without the token cannot make a server
// hold its body, a web page the operator opens cannot write through the operator's browser, and a
// server on loopback answers only requests addressed to loopback.
//
//   HttpAccess access({.write_token = t, .read_token = r, .loopback_only = true});
//   HeaderVerdict v = access.Check(header, HttpAccess::kWrite, 64 << 10);
//
// The rules, in order:
//   1. loopback_only: the Host header must name a loopback host (localhost, 127.x.y.z, [::1], any
//      port), or the request is refused 421: a DNS-rebinding page reaches a loopback server under
//      a name of its own.
//   2. A request that changes something (any method but GET and HEAD, the read-only POSTs aside)
//      and carries an Origin header is refused 403 unless that origin is one of allowed_origins:
//      crawlers and the command line send no Origin; a browser always does.
//   3. kWrite needs `Authorization: Bearer <write_token>` when a write token is set (401).
//   4. kRead (what reveals the cluster: metrics, admin state, mail threads) needs the read token
//      or the write token when a read token is set (401).
//   5. kOpen: nothing more.
// Every refusal is counted (refusals()).
//
// Thread safety: Check and refusals from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/http/http_server.h"

namespace neardup::cluster {

struct HttpAccessOptions {
  std::string write_token;                   // empty: writes need none
  std::string read_token;                    // empty: revealing reads are open
  std::vector<std::string> allowed_origins;  // e.g. "https://console.example"; none by default
  bool loopback_only = false;                // the server listens on loopback alone
};

class HttpAccess {
 public:
  enum Need { kOpen, kRead, kWrite };

  explicit HttpAccess(HttpAccessOptions options) : o_(std::move(options)) {}

  // The verdict on a request's header: refused (with its answer), or let through with
  // `max_body_bytes` (0: the server's limit). `changes`: whether the request changes something
  // (rule 2); by default, every method but GET and HEAD.
  HeaderVerdict Check(const HttpRequest& header, Need need, uint64_t max_body_bytes = 0) const;
  HeaderVerdict Check(const HttpRequest& header, Need need, uint64_t max_body_bytes, bool changes) const;

  uint64_t refusals() const { return refusals_.load(); }
  const HttpAccessOptions& options() const { return o_; }

 private:
  const HttpAccessOptions o_;
  mutable std::atomic<uint64_t> refusals_{0};
};

// Whether a Host header's value ("name", "name:port", "[v6]:port") names a loopback host.
bool IsLoopbackHostHeader(std::string_view host);

}  // namespace neardup::cluster
