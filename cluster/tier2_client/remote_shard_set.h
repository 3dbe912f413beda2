// RemoteShardSet: pipeline/shard_set.h's ShardSet whose shards live in Tier 2 servers
// (cluster/tier2_server/tier2_server.h), reached over TCP with frames of proto/cluster.proto. Shard m is served
// by servers[m % servers.size()] (or as `placement` says); opening the set asks each server to open its shards of the store
// with the store's parameters.
//
//   RemoteShardSetOptions r;  r.servers = {"127.0.0.1:7001", "127.0.0.1:7002"};
//   pipeline::PipelineOptions o;  ...
//   o.open_shards = [r](const pipeline::ShardSetOptions& so) { return OpenRemoteShardSet(r, so); };
//
// Each call takes an idle connection to its server from a pool (or opens one, retrying with
// backoff until connect_timeout_ms), sends one request and waits for its answer until
// call_timeout_ms; a connection whose call failed in transport is closed, the next call opens a
// new one. A pooled connection the server has closed meanwhile (its idle timeout, a restart) is
// noticed before it is used and replaced. A call is not retried (a write step is not
// idempotent): the error goes to the caller.
//
// With `tls`, every connection is mutual TLS: the server must present a certificate of the
// cluster's CA, and this side presents its own.
//
// Errors, besides the shard's own (carried back with their code and message): InvalidArgument at
// open for TLS files that cannot be read; Unavailable when a server cannot be reached, refuses the
// TLS handshake, or the connection breaks (the server named); DeadlineExceeded when the
// answer does not come in time; Corruption for a reply that is not a valid frame.
//
// Thread safety: as ShardSet (calls for different shards at once; for one shard, reads at any
// time and the write steps one at a time).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cluster/http/tls.h"
#include "pipeline/shard_set.h"

namespace neardup::cluster {

struct RemoteShardSetOptions {
  std::vector<std::string> servers;   // host:port of each Tier 2 server
  // The server (index into `servers`) of each shard; empty: shard m on servers[m % servers.size()].
  // A rebalance between server lists places each shard on the server that holds it before or
  // after (cluster/tier1_server/tier1_service.h). Must cover every shard of the set when given.
  std::vector<uint32_t> placement;
  uint32_t connect_timeout_ms = 10000;
  uint32_t call_timeout_ms = 300000;  // a batch comparison of a large shard takes seconds
  // The deadline of the open (each server rebuilds its shards' indexes from their logs); 0: the
  // call_timeout_ms. A short call deadline, to learn soon of a server that stopped answering,
  // need not cut short a long open.
  uint32_t open_timeout_ms = 0;
  // Called (from the open's threads) for every shard with its server's answer to the open, so a
  // caller learns which shards are down when the open fails. May be empty.
  std::function<void(uint32_t shard, const Status& status)> on_open;
  // Mutual TLS to the servers (cluster/http/tls.h); none given: plain TCP.
  TlsFiles tls;
};

StatusOr<std::unique_ptr<pipeline::ShardSet>> OpenRemoteShardSet(const RemoteShardSetOptions& remote,
                                                                 const pipeline::ShardSetOptions& options);

}  // namespace neardup::cluster
