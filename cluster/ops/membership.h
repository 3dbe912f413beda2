// Membership: who serves what in a cluster, behind one small interface: its members (role,
// address, the shards each Tier 2 server holds, pid), and the partition map's generation, under a
// version that grows with every change. `cluster up` writes it, `cluster down` and the operators'
// tools read it. FileMembership keeps it in a file on one host (written atomically); a store with
// watches (etcd) implements the same interface for several hosts.
//
// Thread safety: an implementation may be used from several threads and processes; Write is
// atomic (a reader sees the old view or the new one).
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "proto/cluster.pb.h"

namespace neardup::cluster {

class Membership {
 public:
  virtual ~Membership() = default;
  // NotFound when no view was ever written; Corruption when it does not parse.
  virtual StatusOr<pb::ClusterMembership> Read() const = 0;
  // Writes `view` with its version set to the stored one's + 1 (IoError when it cannot).
  virtual Status Write(pb::ClusterMembership view) = 0;
};

// The view in a text-format file (readable by an operator), replaced atomically.
std::unique_ptr<Membership> FileMembership(std::string path);

// Shard m of `shards` lives on Tier 2 server m % servers (cluster/tier2_client/remote_shard_set.h): the shards
// of server i.
std::vector<uint32_t> ShardsOfServer(uint32_t shards, uint32_t servers, uint32_t i);

}  // namespace neardup::cluster
