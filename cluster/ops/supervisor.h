// Supervisor: starts a cluster's processes on this host (`neardup tier2-server` x N, then
// `neardup tier1-server` pointed at them), waits until each is healthy, and keeps them running: a
// member that dies is started again on the same address with the same store, after a backoff that
// doubles per restart (restart_min_ms..restart_max_ms, back to the minimum once it ran a minute),
// and it is logged. Who serves what is written to the cluster's Membership after every change.
// Stop() stops the Tier 1 server first (it stops taking ingest and commits what it holds), then
// the Tier 2 servers, each with SIGTERM, and SIGKILL past the deadline.
//
// Scale() grows or shrinks the Tier 2 servers while the cluster runs and takes ingest: a server
// added is started (tier2-N, on an empty directory), then the Tier 1 server rebalances its
// shards onto the new list (POST /v1/admin/rebalance: the batch loop moves pages between its
// batches); a server drained is stopped once the rebalance is done, and its directory removed. The cluster keeps one shard per Tier 2 server (shard m
// lives on server m: a rebalance moves cells between shards, never shards between servers). The
// count is kept in tier2_servers (beside the config), which a later `cluster up` starts.
//
// A new cluster needs no map: the Tier 1 server builds its store's map from the first records it
// takes, with one shard per Tier 2 server (tier1-server --new-store-shards; cluster/tier1_server/README.md, A
// new store's map), and the membership names each server's shards once that map is there.
//
// A cluster started again (after `cluster down`) gives each Tier 2 server the address the
// membership recorded for it, as its store records them (with tier2_base_port 0, the first start
// took free ports).
//
// Layout under cluster.dir: tier1/ (the Tier 1 server's store), tier2-I/ (server I's shards),
// logs/NAME.log (each member's standard error), NAME.port, membership.textproto, tier2_servers,
// and token (the writers' bearer token, mode 0600) unless the configuration names one, and with
// cluster.tls the cluster's CA and member certificate (ca.pem, ca.key, member.pem, member.key).
//
// Thread safety: Start, then Run on one thread; Scale on another while Run runs (one at a time);
// Stop (or RequestStop) from any thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cluster/ops/membership.h"
#include "common/status.h"
#include "proto/config.pb.h"

namespace neardup::cluster {

// Supervisor::Scale's request: the Tier 2 server count after it, and the rebalance's options
// (as ClusterRebalanceRequest's; 0: the Tier 1 server's defaults).
struct ScaleRequest {
  uint32_t tier2_servers = 0;
  double max_move = 0.5;
  double max_mb_per_s = 0;
  double min_batch_share = 0;
};

struct SupervisorOptions {
  std::string binary;          // the neardup binary the members run
  std::string config_path;     // passed to every member (--config); empty: none
  pb::NeardupConfig config;    // defaults filled: cluster, tier1_server, tier2_server sections
};

class Supervisor {
 public:
  explicit Supervisor(SupervisorOptions options);
  ~Supervisor();

  // Starts every member and waits (cluster.start_timeout_ms) until all are healthy. Errors:
  // IoError when a directory cannot be made or a process cannot start; DeadlineExceeded naming
  // the member that did not come up (its log's last lines included); the members started are
  // stopped again.
  Status Start();
  // The API's base URL (https://host:port, or http:// without TLS), once started.
  const std::string& api() const { return api_; }
  // Supervises until RequestStop(): restarts members that die. Then stops them all.
  void Run();
  void RequestStop() { stop_ = true; }
  // Grows or shrinks the Tier 2 servers to request.tier2_servers (see above) and returns the
  // rebalance's final state (ClusterRebalanceJson; "{}" when the count is already that).
  // Errors: InvalidArgument for a count out of 1..256; FailedPrecondition when the store's shards
  // are not one per server, or it has no map yet; Spawn's and WaitHealthy's for a server added
  // (those started are stopped again); IoError/Unavailable when the Tier 1 server cannot be asked;
  // FailedPrecondition with the state when the rebalance was refused or failed (no server drained
  // is stopped then).
  StatusOr<std::string> Scale(const ScaleRequest& request);

 private:
  struct Member {
    std::string name, role, store, address;
    std::vector<std::string> args;  // without the binary
    pid_t pid = 0;
    uint32_t restarts = 0;
    uint32_t backoff_ms = 0;
    std::chrono::steady_clock::time_point started, restart_at;
  };
  Status Spawn(Member& m);
  // Waits until `m` answers (its port file, then /healthz or a TCP connect) or the deadline.
  Status WaitHealthy(Member& m, std::chrono::steady_clock::time_point deadline);
  void StopAll();
  // SIGTERM, then SIGKILL past the deadline; waits for it.
  void StopMember(Member& m, uint32_t grace_ms);
  // Waits for `m`, signalled, to exit; SIGKILL past `deadline` (grace_ms names it in the log).
  void AwaitStop(Member& m, std::chrono::steady_clock::time_point deadline, uint32_t grace_ms);
  void Publish();
  // shards_ and map_generation_ from the Tier 1 store's map.pb; false when it has none yet, or
  // they did not change. A new store's map is built by the Tier 1 server from its first records
  // (cluster/tier1_server/tier1_service.h): Run picks it up once it is there.
  bool ReadMap();
  // The configuration names no token: cluster.dir/token is made (once; mode 0600) and given to
  // the Tier 1 server. InvalidArgument/IoError when it cannot be read or written.
  Status EnsureToken();
  // cluster.tls: the cluster's CA and member certificate in cluster.dir (made once), given to the
  // members for what the configuration names no certificates of its own: the links between the
  // tiers (--tls-dir, --tier2-tls-dir) and HTTPS on the API (the Tier 1 server's --tls-dir).
  Status EnsureCertificates();
  Member Tier2Member(uint32_t i) const;
  uint32_t Tier2Count() const;
  std::string Path(const std::string& name) const;

  const SupervisorOptions o_;
  // tier2-0..N-1, then tier1; guarded by mu_ (Run's loop and Scale; Start before either).
  std::mutex mu_;
  std::vector<Member> members_;
  std::string api_;
  std::string token_file_;  // the token the cluster made (EnsureToken); empty: the configuration's
  std::string tls_dir_;     // the certificates the cluster made, for the tiers' links; empty: none
  std::string api_tls_dir_;  // ... for HTTPS on the API; empty: the configuration's, or none
  std::string api_scheme_ = "http";
  std::string api_ca_;       // the CA the API's certificate is checked against (https)
  std::unique_ptr<Membership> membership_;
  uint32_t shards_ = 0;
  uint64_t map_generation_ = 0;
  std::atomic<bool> stop_{false};
};

}  // namespace neardup::cluster
