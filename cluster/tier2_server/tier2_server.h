// Tier2Server: a Tier2Service on a TCP port. Each connection carries frames (cluster/tier2_server/frame.h) of
// Tier 2 requests, answered in order on that connection; connections are served at once. Network
// I/O runs on `io_threads` threads, each with an io_context of its own that a connection stays on
// (cluster/http/net.h), the requests' work (comparisons, writes) on a separate pool of `work_threads`,
// so a long comparison never holds up reading and writing; a read that answers at once (a
// signature, the shard's stats) is served on the network thread.
//
//   Tier2ServerOptions o;  o.listen = "127.0.0.1:0";  o.store = "/data/tier2-a";
//   ASSIGN_OR_RETURN(auto server, Tier2Server::Start(o));   // listening when it returns
//   server->port();                                         // the port bound (for ":0")
//   server->Stop();                                         // or the destructor
//
// A frame that cannot be decoded (bad magic or version, unknown type, a length over its type's
// limit or max_request_bytes, a body that does not parse) closes its connection and is logged (a
// few lines a second at most: common/log_limit.h); the server goes on with the others. A request that decodes but asks for nothing the server can do (no body, a shard not
// served here) is answered with its error, and the connection stays.
//
// A connection does not pin the server's resources: a body is read into memory as its bytes
// arrive (a header alone cannot make the server reserve its length), a frame begun must keep
// coming and an answer must keep leaving (stall_timeout_ms), and a connection idle between frames
// is closed after idle_timeout_ms (a client's pooled connections wait there between calls; closing
// them is not an error).
//
// Thread safety: Start, port and Stop from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cluster/http/tls.h"
#include "common/status.h"

namespace neardup::cluster {

struct Tier2ServerOptions {
  std::string listen = "127.0.0.1:0";  // host:port; port 0 picks a free one
  std::string store;                   // the server's store directory (its shards live there)
  int io_threads = 1;
  int work_threads = 2;
  // Once a frame's first byte has arrived, each further read of it (and each write of its answer)
  // must move within this, or the connection is closed: a peer that sends half a frame and stalls,
  // or stops reading its answers.
  uint32_t stall_timeout_ms = 30000;
  // A connection with no new frame for this long is closed.
  uint32_t idle_timeout_ms = 600000;
  // Connections open at once (one past it is closed at once), one request frame's body, and the
  // request bodies held at once over all connections (a frame that would pass it is refused:
  // its connection closes). Caps on what peers can make the server hold.
  uint32_t max_connections = 256;
  uint64_t max_request_bytes = uint64_t{256} << 20;
  uint64_t max_inflight_bytes = uint64_t{512} << 20;
  // Mutual TLS (cluster/http/tls.h): every connection's peer must present a certificate of the
  // cluster's CA. Without it the server listens on loopback only.
  TlsFiles tls;
};

struct Tier2ServerStats {
  uint64_t open_connections = 0, refused_connections = 0, refused_frames = 0, inflight_bytes = 0;
  uint64_t refused_handshakes = 0;  // TLS handshakes that failed (no certificate of the cluster, none in time)
};

class Tier2Server {
 public:
  // Binds and starts serving. Errors: InvalidArgument for a bad address, thread count or a
  // timeout of 0, TLS files that cannot be read, or an address beyond loopback without TLS;
  // IoError when the address cannot be bound (named).
  static StatusOr<std::unique_ptr<Tier2Server>> Start(const Tier2ServerOptions& options);
  virtual ~Tier2Server() = default;
  virtual uint16_t port() const = 0;
  virtual Tier2ServerStats stats() const = 0;
  // Stops accepting, closes every connection and joins the threads. Requests in flight finish
  // their work (a shard write completes or is not started) but may go unanswered.
  virtual void Stop() = 0;
  // Blocks until Stop is called from another thread or a signal handler's thread.
  virtual void Wait() = 0;
};

}  // namespace neardup::cluster
