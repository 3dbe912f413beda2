#include "cli/common_options.h"

#include <cstdio>
#include <fstream>

#include <filesystem>

#include "cluster/http/bearer_token.h"
#include "cluster/http/net.h"
#include "common/config.h"

namespace neardup::cli {
namespace {

// "<what> (in 1..16, default 5)": the range and default of the config field the flag overrides.
std::string Help(const std::string& what, std::string_view field) {
  return what + " (" + ConfigRange(field) + ", default " + ConfigDefaultText(field) + ")";
}

}  // namespace

void AddSharedOptions(CLI::App* cmd, SharedOptions* o) {
  cmd->add_option("--config", o->config, "configuration (Protobuf text format, e.g. configs/embedded.textproto)");
  cmd->add_option("--threshold", o->threshold, Help("Jaccard threshold", "baseline.threshold"));
  cmd->add_option("--shingle-k", o->shingle_k, Help("words per shingle", "shingle.k"));
  cmd->add_option("--dims", o->dims, Help("length dimensions", "shingle.dims"));
  cmd->add_option("--threads", o->threads, "worker threads (default: one per core)");
  cmd->add_option("--max-line-bytes", o->max_line_bytes, Help("skip crawl lines longer than this many bytes", "reader.max_line_bytes"));
}

StatusOr<ResolvedOptions> ResolveShared(const SharedOptions& o) {
  pb::NeardupConfig cfg = DefaultConfig();
  pb::NeardupConfig written;
  if (!o.config.empty()) {
    ASSIGN_OR_RETURN(cfg, LoadConfig(o.config, &written));
  }
  ResolvedOptions r;
  auto from_file = [&](const char* param, bool set, const char* field) {
    if (set) r.given[param] = o.config + " " + field;
  };
  from_file("threshold", written.baseline().has_threshold(), "baseline.threshold");
  from_file("shingle_k", written.shingle().has_k(), "shingle.k");
  from_file("dims", written.shingle().has_dims(), "shingle.dims");
  from_file("routing", written.pipeline().has_routing(), "pipeline.routing");
  from_file("rho", written.pipeline().has_rho(), "pipeline.rho");
  from_file("shards", written.pipeline().has_shards(), "pipeline.shards");
  from_file("min_threshold", written.tier2().has_min_threshold(), "tier2.min_threshold");
  from_file("prefix_overlap", written.tier2().has_prefix_overlap(), "tier2.prefix_overlap");
  if (o.threshold) r.given["threshold"] = "--threshold";
  if (o.shingle_k) r.given["shingle_k"] = "--shingle-k";
  if (o.dims) r.given["dims"] = "--dims";
  r.threshold = o.threshold.value_or(cfg.baseline().threshold());
  if (auto rule = ConfigRangeError("baseline.threshold", r.threshold); !rule.empty()) {
    return InvalidArgument("--threshold " + rule + ", got " + std::to_string(r.threshold));
  }
  r.signer.k = o.shingle_k.value_or(static_cast<int>(cfg.shingle().k()));
  r.signer.dims = o.dims.value_or(static_cast<int>(cfg.shingle().dims()));
  if (Status s = ValidateSignerOptions(r.signer); !s.ok()) return InvalidArgument("--shingle-k/--dims: " + s.message());
  r.reader.max_line_bytes = o.max_line_bytes.value_or(cfg.reader().max_line_bytes());
  if (auto rule = ConfigRangeError("reader.max_line_bytes", r.reader.max_line_bytes); !rule.empty()) {
    return InvalidArgument("--max-line-bytes " + rule);
  }
  r.threads = o.threads.value_or(static_cast<int>(cfg.baseline().threads()));
  if (r.threads < 0) return InvalidArgument("--threads must be >= 0");
  // The configuration in effect: what the store's parameters and the shards are made from.
  cfg.mutable_shingle()->set_k(static_cast<uint32_t>(r.signer.k));
  cfg.mutable_shingle()->set_dims(static_cast<uint32_t>(r.signer.dims));
  r.config = cfg;
  return r;
}

void WritePortFile(const std::string& path, uint16_t port) {
  if (path.empty()) return;
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << port << "\n";
  std::rename(tmp.c_str(), path.c_str());
}

}  // namespace neardup::cli

namespace neardup::cli {

StatusOr<ClusterClient> ResolveClusterClient(const std::string& config, const std::string& server,
                                             const std::string& token_file, const std::string& ca_file) {
  ClusterClient c;
  c.server = server;
  c.ca_file = ca_file;
  if (!token_file.empty()) {
    ASSIGN_OR_RETURN(c.token, cluster::ReadBearerTokenFile(token_file));
  }
  if (config.empty()) {
    if (server.empty()) return InvalidArgument("give --server (http(s)://host:port) or the cluster's --config");
    return c;
  }
  ASSIGN_OR_RETURN(pb::NeardupConfig cfg, LoadConfig(config));
  const pb::Tier1ServerConfig& t = cfg.tier1_server();
  // HTTPS with the configuration's certificates, or with those cluster up made in its directory.
  bool https = false;
  std::string ca;
  if (!t.tls().cert_file().empty()) {
    https = true;
    ca = t.tls().ca_file();
  } else if (const std::string made = cfg.cluster().dir() + "/ca.pem"; cfg.cluster().tls() && std::filesystem::exists(made)) {
    https = true;
    ca = made;
  }
  if (c.ca_file.empty() && (c.server.empty() || c.server.starts_with("https://"))) c.ca_file = ca;
  if (c.server.empty()) {
    std::string host;
    uint16_t port = 0;
    RETURN_IF_ERROR(cluster::ParseHostPort(t.listen(), &host, &port));
    if (host == "0.0.0.0" || host.empty()) host = "127.0.0.1";
    if (host == "::") host = "::1";
    if (host.find(':') != std::string::npos) host = "[" + host + "]";
    if (port == 0) {
      // A free port: the one cluster up's Tier 1 server took (its port file).
      std::ifstream f(cfg.cluster().dir() + "/tier1.port");
      uint32_t taken = 0;
      if (!(f >> taken) || taken == 0 || taken > 65535) {
        return InvalidArgument("tier1_server.listen " + t.listen() + " takes a free port, and " + cfg.cluster().dir() +
                               "/tier1.port does not say which: give --server");
      }
      port = static_cast<uint16_t>(taken);
    }
    c.server = (https ? "https://" : "http://") + host + ":" + std::to_string(port);
  }
  if (token_file.empty()) {
    if (!t.bearer_token().empty()) {
      c.token = t.bearer_token();
    } else if (!t.bearer_token_file().empty()) {
      ASSIGN_OR_RETURN(c.token, cluster::ReadBearerTokenFile(t.bearer_token_file()));
    } else if (const std::string made = cfg.cluster().dir() + "/token"; std::filesystem::exists(made)) {
      ASSIGN_OR_RETURN(c.token, cluster::ReadBearerTokenFile(made));
    }
  }
  return c;
}

}  // namespace neardup::cli
