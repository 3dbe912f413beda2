// FaultProxy: a TCP proxy for tests, put between a client and a server on loopback, that injects
// network faults the test can change while connections are running: a delay on every forwarded
// chunk, connections refused (closed at once), held open in silence, cut after some bytes, or reset.
//
//   ASSIGN_OR_RETURN(auto proxy, FaultProxy::Start({.target = "127.0.0.1:7001"}));
//   remote.servers = {"127.0.0.1:" + std::to_string(proxy->port())};   // the client goes through it
//   proxy->SetFaults({.mode = FaultMode::kBlackhole});                  // calls now time out
//   proxy->SetFaults({});                                              // pass-through again
//
// Each accepted connection gets its own connection to the target (a target that cannot be reached
// closes the accepted one). Bytes are forwarded in chunks as they arrive, in both directions; the
// faults in force when a chunk arrives decide what happens to it, so a change applies to the
// connections already open from their next chunk on:
//   kPass       forwarded (after delay_ms).
//   kDrop       new connections are accepted and closed at once (FIN) without reaching the target;
//               an open connection is closed at its next chunk.
//   kBlackhole  chunks are read and thrown away; the connection stays open and silent until a peer
//               closes it (or the mode changes: later chunks are forwarded, but what was thrown
//               away is lost, so the stream between the peers is no longer whole).
//   kTruncate   a direction's first after_bytes bytes of the connection are forwarded, then both
//               sides are closed (FIN). With after_bytes already passed, the next chunk closes.
//   kReset      as kTruncate, but both sides are closed with RST (SO_LINGER 0, then close); with
//               after_bytes 0 a new connection is reset as soon as it is accepted.
// `direction` says which directions kBlackhole, kTruncate and kReset act on (the other passes);
// the delay applies to both. When either side closes or fails, the proxy closes the other.
//
// Thread safety: SetFaults, faults, the counters and Stop may be called from any thread at any
// time; the proxy runs on its own thread. Stop (or the destructor) closes every connection and
// the listening socket and returns once the proxy's thread has ended.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace neardup::cluster {

enum class FaultMode { kPass, kDrop, kBlackhole, kTruncate, kReset };
enum class FaultDirection { kBoth, kToServer, kToClient };

struct FaultProxyFaults {
  FaultMode mode = FaultMode::kPass;
  uint32_t delay_ms = 0;        // before forwarding each chunk, in both directions
  uint64_t after_bytes = 0;     // kTruncate, kReset: bytes of the direction forwarded first
  FaultDirection direction = FaultDirection::kBoth;
};

struct FaultProxyOptions {
  std::string listen = "127.0.0.1:0";  // host:port; port 0 picks a free one
  std::string target;                  // host:port the connections are forwarded to (an IP address)
  FaultProxyFaults faults;             // in force from the start
};

// "pass", "drop", "blackhole", "truncate", "reset" (as the command line spells them).
StatusOr<FaultMode> ParseFaultMode(const std::string& text);
StatusOr<FaultDirection> ParseFaultDirection(const std::string& text);  // "both", "to-server", "to-client"

class FaultProxy {
 public:
  // Binds and starts forwarding. Errors: InvalidArgument for a listen or target address that is
  // not an IP host:port; IoError when the listen address cannot be bound (named).
  static StatusOr<std::unique_ptr<FaultProxy>> Start(const FaultProxyOptions& options);
  virtual ~FaultProxy() = default;

  virtual uint16_t port() const = 0;
  virtual void SetFaults(const FaultProxyFaults& faults) = 0;
  virtual FaultProxyFaults faults() const = 0;

  // Connections accepted since the start; connections open now (accepted, not yet closed).
  virtual uint64_t connections() const = 0;
  virtual uint64_t open_connections() const = 0;
  // Bytes forwarded client → target and target → client (what was thrown away is not counted).
  virtual uint64_t bytes_to_server() const = 0;
  virtual uint64_t bytes_to_client() const = 0;

  // Closes the listening socket and every connection (FIN), and joins the proxy's thread.
  // Idempotent.
  virtual void Stop() = 0;
};

}  // namespace neardup::cluster
