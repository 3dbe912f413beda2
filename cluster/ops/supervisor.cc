#include "cluster/ops/supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <boost/asio.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cluster/http/bearer_token.h"
#include "cluster/http/http_client.h"
#include "cluster/http/net.h"
#include "cluster/http/tls.h"
#include "partitioner/partition_map.h"
#include "pipeline/store.h"
#include "storage/file_env.h"

extern char** environ;

namespace neardup::cluster {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The last `n` lines of a log, for an error message.
std::string Tail(const std::string& path, int n) {
  const std::string text = ReadSmallFile(path);
  size_t at = text.size();
  for (int i = 0; i <= n && at != std::string::npos && at > 0; ++i) at = text.rfind('\n', at - 1);
  return at == std::string::npos ? text : text.substr(at + 1);
}

bool TcpAnswers(const std::string& address) {
  std::string host;
  uint16_t port = 0;
  if (!ParseHostPort(address, &host, &port).ok()) return false;
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket s(io);
  boost::system::error_code ec;
  s.connect({boost::asio::ip::make_address(host, ec), port}, ec);
  return !ec;
}

}  // namespace

Supervisor::Supervisor(SupervisorOptions options) : o_(std::move(options)) {}

Supervisor::~Supervisor() { StopAll(); }

std::string Supervisor::Path(const std::string& name) const { return o_.config.cluster().dir() + "/" + name; }

Status Supervisor::Spawn(Member& m) {
  const std::string port_file = Path(m.name + ".port");
  std::error_code ec;
  fs::remove(port_file, ec);
  std::vector<std::string> args = {o_.binary};
  args.insert(args.end(), m.args.begin(), m.args.end());
  // The address it had (a restart takes the same port: the Tier 1 server knows it by it).
  if (!m.address.empty()) args.insert(args.end(), {"--listen", m.address});
  args.insert(args.end(), {"--port-file", port_file});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string log = Path("logs/" + m.name + ".log");
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  // The members take their signals from the supervisor, not from a terminal's Ctrl-C.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  const int rc = posix_spawn(&m.pid, o_.binary.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return IoError("cluster: cannot start " + m.name + ": " + std::strerror(rc));
  m.started = Clock::now();
  spdlog::info("cluster: started {} (pid {})", m.name, m.pid);
  return Status::Ok();
}

Status Supervisor::WaitHealthy(Member& m, Clock::time_point deadline) {
  const std::string port_file = Path(m.name + ".port");
  while (Clock::now() < deadline) {
    if (m.pid != 0) {
      int status = 0;
      if (::waitpid(m.pid, &status, WNOHANG) == m.pid) {
        m.pid = 0;
        return IoError("cluster: " + m.name + " exited while starting; its log ends:\n" + Tail(Path("logs/" + m.name + ".log"), 5));
      }
    }
    std::string port = ReadSmallFile(port_file);
    while (!port.empty() && (port.back() == '\n')) port.pop_back();
    if (!port.empty()) {
      const std::string address = o_.config.cluster().host() + ":" + port;
      if (m.role == "tier1") {
        auto c = HttpClient::Create(api_scheme_ + "://" + address, {.timeout = milliseconds(2000), .ca_file = api_ca_});
        if (c.ok()) {
          auto r = (*c)->Request("GET", "/healthz", "");
          if (r.ok() && r->status == 200) {
            m.address = address;
            return Status::Ok();
          }
        }
      } else if (TcpAnswers(address)) {
        m.address = address;
        return Status::Ok();
      }
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  return DeadlineExceeded("cluster: " + m.name + " did not come up within cluster.start_timeout_ms; its log ends:\n" +
                          Tail(Path("logs/" + m.name + ".log"), 5));
}

Supervisor::Member Supervisor::Tier2Member(uint32_t i) const {
  const pb::ClusterConfig& c = o_.config.cluster();
  Member m;
  m.name = "tier2-" + std::to_string(i);
  m.role = "tier2";
  m.store = Path(m.name);
  m.args = {"--log-level", "info", "tier2-server"};
  if (!o_.config_path.empty()) m.args.insert(m.args.end(), {"--config", o_.config_path});
  m.args.insert(m.args.end(), {"--store", m.store});
  if (!tls_dir_.empty()) m.args.insert(m.args.end(), {"--tls-dir", tls_dir_});
  if (c.tier2_base_port() != 0) m.address = c.host() + ":" + std::to_string(c.tier2_base_port() + i);
  else m.address = c.host() + ":0";
  return m;
}

uint32_t Supervisor::Tier2Count() const {
  uint32_t n = 0;
  for (const Member& m : members_) n += m.role == "tier2";
  return n;
}

Status Supervisor::Start() {
  const pb::ClusterConfig& c = o_.config.cluster();
  std::error_code ec;
  fs::create_directories(Path("logs"), ec);
  if (ec) return IoError("cluster: cannot create " + Path("logs") + ": " + ec.message());
  membership_ = FileMembership(Path("membership.textproto"));
  std::vector<std::string> with_config;
  if (!o_.config_path.empty()) with_config = {"--config", o_.config_path};
  // Writers need a token: the configuration's, or one made for the cluster (kept across starts,
  // mode 0600), where the clients given this configuration find it.
  RETURN_IF_ERROR(EnsureToken());
  RETURN_IF_ERROR(EnsureCertificates());
  std::string tier2_list;
  // A cluster scaled since its configuration was written starts the servers it was scaled to.
  uint32_t servers = c.tier2_servers();
  if (const std::string kept = ReadSmallFile(Path("tier2_servers")); !kept.empty()) {
    const unsigned long n = std::strtoul(kept.c_str(), nullptr, 10);
    if (n >= 1 && n <= 256) servers = static_cast<uint32_t>(n);
    if (servers != c.tier2_servers()) {
      spdlog::info("cluster: {} Tier 2 servers, as the cluster was scaled to ({}; cluster.tier2_servers says {})", servers,
                   Path("tier2_servers"), c.tier2_servers());
    }
  }
  // A cluster started before keeps its Tier 2 servers' addresses (its store records them, and
  // refuses a start that would seek a shard elsewhere): free ports were taken the first time.
  std::map<std::string, std::string> before;
  if (auto view = membership_->Read(); view.ok()) {
    for (const pb::ClusterMember& m : view->members()) {
      if (m.role() == "tier2" && !m.address().empty() && !m.address().ends_with(":0")) before[m.name()] = m.address();
    }
  }
  for (uint32_t i = 0; i < servers; ++i) {
    members_.push_back(Tier2Member(i));
    Member& m = members_.back();
    if (auto it = before.find(m.name); it != before.end() && c.tier2_base_port() == 0) m.address = it->second;
  }
  const auto deadline = Clock::now() + milliseconds(c.start_timeout_ms());
  for (Member& m : members_) {
    Status s = Spawn(m);
    if (s.ok()) s = WaitHealthy(m, deadline);
    if (!s.ok()) {
      StopAll();
      return s;
    }
    tier2_list += (tier2_list.empty() ? "" : ",") + m.address;
  }
  Member t1;
  t1.name = "tier1";
  t1.role = "tier1";
  t1.store = Path("tier1");
  t1.args = {"--log-level", "info", "tier1-server"};
  t1.args.insert(t1.args.end(), with_config.begin(), with_config.end());
  t1.args.insert(t1.args.end(), {"--store", t1.store, "--tier2", tier2_list});
  if (!token_file_.empty()) t1.args.insert(t1.args.end(), {"--bearer-token-file", token_file_});
  if (!tls_dir_.empty()) t1.args.insert(t1.args.end(), {"--tier2-tls-dir", tls_dir_});
  if (!api_tls_dir_.empty()) t1.args.insert(t1.args.end(), {"--tls-dir", api_tls_dir_});
  // A new store given no map builds it from its first records: one shard per Tier 2 server.
  t1.args.insert(t1.args.end(), {"--new-store-shards", std::to_string(servers)});
  t1.address = o_.config.tier1_server().listen();
  members_.push_back(std::move(t1));
  Status s = Spawn(members_.back());
  if (s.ok()) s = WaitHealthy(members_.back(), deadline);
  if (!s.ok()) {
    StopAll();
    return s;
  }
  api_ = api_scheme_ + "://" + members_.back().address;
  ReadMap();
  Publish();
  return Status::Ok();
}

Status Supervisor::EnsureToken() {
  const pb::Tier1ServerConfig& t = o_.config.tier1_server();
  if (!t.bearer_token().empty() || !t.bearer_token_file().empty()) return Status::Ok();
  token_file_ = fs::absolute(Path("token")).string();
  if (fs::exists(token_file_)) return ReadBearerTokenFile(token_file_).status();
  RETURN_IF_ERROR(WriteBearerTokenFile(token_file_, GenerateBearerToken()));
  spdlog::info("cluster: a bearer token for writers made in {}", token_file_);
  return Status::Ok();
}

Status Supervisor::EnsureCertificates() {
  const pb::TlsConfig& api = o_.config.tier1_server().tls();
  if (!api.cert_file().empty()) {
    api_scheme_ = "https";  // the configuration's own certificate on the API
    api_ca_ = api.ca_file();
  }
  if (!o_.config.cluster().tls()) return Status::Ok();
  // The configuration's own certificates serve where it names them.
  const bool tiers = !TlsFiles::From(o_.config.tier2_server().tls()).enabled() &&
                     !TlsFiles::From(o_.config.tier1_server().tier2_tls()).enabled();
  if (!tiers && !api.cert_file().empty()) return Status::Ok();
  const std::string dir = fs::absolute(o_.config.cluster().dir()).lexically_normal().string();
  const TlsFiles files = TlsFiles::InDir(dir);
  if (!fs::exists(files.ca) || !fs::exists(files.cert) || !fs::exists(files.key)) {
    std::vector<std::string> hosts = {"127.0.0.1", "localhost", "::1"};
    if (const std::string& h = o_.config.cluster().host(); std::find(hosts.begin(), hosts.end(), h) == hosts.end()) {
      hosts.push_back(h);
    }
    RETURN_IF_ERROR(MakeClusterCertificates(dir, hosts, 825));
    spdlog::info("cluster: TLS: CA and member certificate made in {}", dir);
  }
  if (tiers) tls_dir_ = dir;
  if (api.cert_file().empty()) {
    api_tls_dir_ = dir;
    api_scheme_ = "https";
    api_ca_ = files.ca;
  }
  return Status::Ok();
}

bool Supervisor::ReadMap() {
  auto map = partitioner::PartitionMap::Load(pipeline::StoreLayout{Path("tier1")}.map());
  if (!map.ok() || (map->shards() == shards_ && map->proto().generation() == map_generation_)) return false;
  shards_ = map->shards();
  map_generation_ = map->proto().generation();
  return true;
}

void Supervisor::Publish() {
  if (!membership_) return;
  pb::ClusterMembership view;
  view.set_supervisor_pid(static_cast<uint32_t>(::getpid()));
  view.set_map_generation(map_generation_);
  const uint32_t servers = Tier2Count();
  for (size_t i = 0; i < members_.size(); ++i) {
    const Member& m = members_[i];
    pb::ClusterMember* x = view.add_members();
    x->set_name(m.name);
    x->set_role(m.role);
    x->set_address(m.address);
    x->set_pid(static_cast<uint32_t>(m.pid));
    x->set_restarts(m.restarts);
    if (m.role == "tier2") {
      for (uint32_t s : ShardsOfServer(shards_, servers, static_cast<uint32_t>(i))) x->add_shards(s);
    }
  }
  if (Status s = membership_->Write(view); !s.ok()) spdlog::warn("cluster: {}", s.message());
}

void Supervisor::Run() {
  const pb::ClusterConfig& c = o_.config.cluster();
  while (!stop_) {
    bool changed = false;
    std::unique_lock lock(mu_);
    for (Member& m : members_) {
      if (m.pid != 0) {
        int status = 0;
        if (::waitpid(m.pid, &status, WNOHANG) != m.pid) continue;
        const std::string how = WIFEXITED(status) ? "exited with " + std::to_string(WEXITSTATUS(status))
                                                  : "was killed by signal " + std::to_string(WTERMSIG(status));
        // A member that ran a minute starts again soon; one that keeps dying waits longer each time.
        m.backoff_ms = Clock::now() - m.started > std::chrono::minutes(1) || m.backoff_ms == 0
                           ? c.restart_min_ms()
                           : std::min(m.backoff_ms * 2, c.restart_max_ms());
        m.restart_at = Clock::now() + milliseconds(m.backoff_ms);
        spdlog::warn("cluster: {} (pid {}) {}; starting it again in {} ms", m.name, m.pid, how, m.backoff_ms);
        m.pid = 0;
        changed = true;
      } else if (Clock::now() >= m.restart_at) {
        ++m.restarts;
        if (Status s = Spawn(m); !s.ok()) {
          spdlog::error("{}", s.message());
          m.restart_at = Clock::now() + milliseconds(c.restart_max_ms());
        }
        changed = true;
      }
    }
    // A new store's map, once the Tier 1 server built it: the shards each Tier 2 server holds.
    if (shards_ == 0 && fs::exists(pipeline::StoreLayout{Path("tier1")}.map()) && ReadMap()) {
      spdlog::info("cluster: the store's partition map is built: {} shards, generation {}", shards_, map_generation_);
      changed = true;
    }
    if (changed) Publish();
    lock.unlock();
    std::this_thread::sleep_for(milliseconds(100));
  }
  std::lock_guard lock(mu_);
  StopAll();
  Publish();
}

void Supervisor::AwaitStop(Member& m, Clock::time_point deadline, uint32_t grace_ms) {
  if (m.pid == 0) return;
  for (;;) {
    int status = 0;
    if (::waitpid(m.pid, &status, WNOHANG) == m.pid) {
      spdlog::info("cluster: {} stopped ({})", m.name,
                   WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status)) : "signal " + std::to_string(WTERMSIG(status)));
      break;
    }
    if (Clock::now() > deadline) {
      spdlog::warn("cluster: {} did not stop within {} ms: killed", m.name, grace_ms);
      ::kill(m.pid, SIGKILL);
      ::waitpid(m.pid, nullptr, 0);
      break;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  m.pid = 0;
}

void Supervisor::StopMember(Member& m, uint32_t grace_ms) {
  if (m.pid == 0) return;
  ::kill(m.pid, SIGTERM);
  AwaitStop(m, Clock::now() + milliseconds(grace_ms), grace_ms);
}

StatusOr<std::string> Supervisor::Scale(const ScaleRequest& q) {
  const pb::ClusterConfig& c = o_.config.cluster();
  if (q.tier2_servers < 1 || q.tier2_servers > 256) return InvalidArgument("cluster scale: --tier2-servers must be in 1..256");
  const std::string store = Path("tier1");
  auto map = partitioner::PartitionMap::Load(pipeline::StoreLayout{store}.map());
  if (!map.ok()) return FailedPrecondition("cluster scale: the store has no partition map yet: " + map.status().message());
  std::vector<std::string> before;
  {
    std::lock_guard lock(mu_);
    const uint32_t servers = Tier2Count();
    if (map->shards() != servers) {
      return FailedPrecondition(fmt::format("cluster scale: the store has {} shards on {} Tier 2 servers; scaling keeps "
                                            "one shard per server (rebalance to {} shards first)",
                                            map->shards(), servers, servers));
    }
    if (q.tier2_servers == servers) return std::string("{}");
    // Servers added: started and healthy before the rebalance names them.
    const auto deadline = Clock::now() + milliseconds(c.start_timeout_ms());
    for (uint32_t i = servers; i < q.tier2_servers; ++i) {
      Member m = Tier2Member(i);
      // It holds no shard of the store's map (shard m lives on server m): what its directory
      // kept from an earlier drain is old, and a shard it opened again would serve it.
      std::error_code ec;
      fs::remove_all(m.store, ec);
      if (ec) return IoError("cluster scale: cannot clear " + m.store + ": " + ec.message());
      Status s = Spawn(m);
      if (s.ok()) s = WaitHealthy(m, deadline);
      if (!s.ok()) {
        StopMember(m, 5000);
        for (uint32_t j = servers; j < Tier2Count(); ++j) StopMember(members_[j], 5000);
        members_.erase(members_.begin() + servers, members_.begin() + Tier2Count());
        Publish();
        return s;
      }
      members_.insert(members_.begin() + i, std::move(m));
    }
    Publish();
    for (uint32_t i = 0; i < Tier2Count(); ++i) before.push_back(members_[i].address);
  }
  // The rebalance onto the first tier2_servers servers, followed to its end.
  auto client = HttpClient::Create(api_, {.timeout = milliseconds(10000), .ca_file = api_ca_});
  if (!client.ok()) return client.status();
  std::map<std::string, std::string> headers;
  if (const std::string& token = o_.config.tier1_server().bearer_token(); !token.empty()) {
    headers["Authorization"] = "Bearer " + token;
  } else if (const std::string& file = o_.config.tier1_server().bearer_token_file(); !file.empty()) {
    ASSIGN_OR_RETURN(std::string t, ReadBearerTokenFile(file));
    headers["Authorization"] = "Bearer " + t;
  } else if (!token_file_.empty()) {
    ASSIGN_OR_RETURN(std::string t, ReadBearerTokenFile(token_file_));
    headers["Authorization"] = "Bearer " + t;
  }
  std::string body = fmt::format("{{\"shards\":{},\"max_move\":{},\"max_mb_per_s\":{}", q.tier2_servers, q.max_move,
                                 q.max_mb_per_s);
  if (q.min_batch_share > 0) body += fmt::format(",\"min_batch_share\":{}", q.min_batch_share);
  body += ",\"tier2\":[";
  for (uint32_t i = 0; i < q.tier2_servers; ++i) body += (i ? ",\"" : "\"") + before[i] + "\"";
  body += "]}";
  spdlog::info("cluster: scaling the Tier 2 servers {} -> {}: {}", before.size(), q.tier2_servers, body);
  auto started = (*client)->Request("POST", "/v1/admin/rebalance", body, headers);
  if (!started.ok()) return started.status();
  if (started->status != 202) {
    return FailedPrecondition(fmt::format("cluster scale: the Tier 1 server answered {}: {}", started->status, started->body));
  }
  std::string state = started->body;
  while (state.find("\"state\":\"running\"") != std::string::npos && !stop_) {
    std::this_thread::sleep_for(milliseconds(200));
    auto r = (*client)->Request("GET", "/v1/admin/rebalance", "", headers);  // a read token may guard it
    if (r.ok() && r->status == 200) state = r->body;
  }
  while (!state.empty() && state.back() == '\n') state.pop_back();
  if (state.find("\"state\":\"done\"") == std::string::npos) return FailedPrecondition("cluster scale: the rebalance did not finish: " + state);
  std::lock_guard lock(mu_);
  // Drained servers hold no shard now: stopped.
  const uint32_t servers = Tier2Count();
  for (uint32_t i = q.tier2_servers; i < servers; ++i) {
    StopMember(members_[i], o_.config.tier1_server().stop_deadline_ms() + 5000);
    std::error_code ec;
    fs::remove_all(members_[i].store, ec);  // its shard is drained: nothing in it is the store's
    if (ec) spdlog::warn("cluster: cannot remove {}: {}", members_[i].store, ec.message());
  }
  if (q.tier2_servers < servers) members_.erase(members_.begin() + q.tier2_servers, members_.begin() + servers);
  ReadMap();
  Publish();
  if (Status s = WriteFileAtomically(FileEnv::Default(), Path("tier2_servers"), std::to_string(q.tier2_servers) + "\n",
                                     /*sync=*/true);
      !s.ok()) {
    spdlog::warn("cluster: {}", s.message());
  }
  spdlog::info("cluster: {} Tier 2 servers now: {}", q.tier2_servers, state);
  return state;
}

void Supervisor::StopAll() {
  // The Tier 1 server first: it stops taking ingest and commits what it holds, through the Tier 2
  // servers, which are stopped after it.
  const uint32_t grace = o_.config.tier1_server().stop_deadline_ms() + 5000;
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<Member*> group;
    for (Member& m : members_) {
      if (m.pid != 0 && (m.role == "tier1") == (pass == 0)) group.push_back(&m);
    }
    for (Member* m : group) ::kill(m->pid, SIGTERM);
    const auto deadline = Clock::now() + milliseconds(grace);
    for (Member* m : group) AwaitStop(*m, deadline, grace);
  }
}

}  // namespace neardup::cluster
