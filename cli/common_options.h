// Options shared by the subcommands that read crawls: --config plus per-run overrides.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <optional>
#include <string>

#include "common/status.h"
#include "document/crawl_reader.h"
#include "document/signature.h"
#include "proto/config.pb.h"

namespace neardup::cli {

struct SharedOptions {
  std::string config;                  // textproto; empty = built-in defaults
  std::optional<double> threshold;
  std::optional<int> shingle_k;
  std::optional<int> dims;
  std::optional<int> threads;
  std::optional<uint64_t> max_line_bytes;
};

struct ResolvedOptions {
  double threshold;
  SignerOptions signer;
  CrawlReaderOptions reader;
  int threads;
  pb::NeardupConfig config;  // the whole file, defaults filled in, with --shingle-k and --dims applied
  // The store parameters given explicitly, by a flag or a field set in the --config file, with
  // where (pipeline/store.h): a store built with other values refuses them; defaults yield to it.
  std::map<std::string, std::string> given;
};

void AddSharedOptions(CLI::App* cmd, SharedOptions* o);

// Loads the config (if any) and applies the command-line overrides. InvalidArgument with
// file:line:column for a bad config, or naming the flag for a bad value.
StatusOr<ResolvedOptions> ResolveShared(const SharedOptions& o);

// Where a client of a running cluster sends its requests, with which token and which CA: --server,
// --bearer-token-file and --ca-file when given, else from the cluster's configuration (--config):
// the API at tier1_server.listen (a wildcard address asked on loopback; port 0: the one cluster
// up's Tier 1 server wrote to cluster.dir/tier1.port), over HTTPS when the configuration gives
// the API certificates (tier1_server.tls: its ca_file is the CA) or cluster up made them
// (cluster.tls and cluster.dir/ca.pem); the token the configuration names (bearer_token,
// bearer_token_file) or the one cluster up made (cluster.dir/token).
struct ClusterClient {
  std::string server;   // http://host:port or https://host:port
  std::string token;    // empty: none
  std::string ca_file;  // https: the CA the server is verified against (empty: the system's)
};
// InvalidArgument when neither --server nor --config is given, or for a bad configuration or
// token file (cluster/http/bearer_token.h).
StatusOr<ClusterClient> ResolveClusterClient(const std::string& config, const std::string& server,
                                             const std::string& token_file, const std::string& ca_file = "");

// A server's --port-file: the port it listens on, written atomically (a temporary file renamed),
// so that a script waiting for the file never reads half of it. Nothing when `path` is empty.
void WritePortFile(const std::string& path, uint16_t port);

}  // namespace neardup::cli
