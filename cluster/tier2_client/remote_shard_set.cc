#include "cluster/tier2_client/remote_shard_set.h"

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <thread>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <fmt/format.h>

#include "cluster/tier2_server/frame.h"
#include "cluster/http/net.h"
#include "cluster/tier2_server/tier2_messages.h"
#include "cluster/http/tls.h"
#include "proto/cluster.pb.h"

namespace neardup::cluster {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

int64_t UnixMs(Clock::time_point deadline) {
  const auto left = deadline - Clock::now();
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             (std::chrono::system_clock::now() + left).time_since_epoch())
      .count();
}

// One TCP connection to a server, used by one call at a time. Its operations run on its own
// io_context, driven by the calling thread until they finish or the deadline passes.
class Connection {
 public:
  // `tls` null: plain TCP.
  explicit Connection(const std::shared_ptr<asio::ssl::context>& tls) : socket_(io_) {
    if (tls != nullptr) tls_ = std::make_unique<asio::ssl::stream<tcp::socket>>(io_, *tls);
  }

  Status Connect(const tcp::endpoint& endpoint, Clock::time_point deadline, const std::string& name) {
    boost::system::error_code result = asio::error::would_block;
    raw().async_connect(endpoint, [&](const boost::system::error_code& ec) { result = ec; });
    if (!RunUntil(deadline)) return Unavailable("tier2 " + name + ": connect timed out");
    if (result) return Unavailable("tier2 " + name + ": connect: " + result.message());
    boost::system::error_code ec;
    raw().set_option(tcp::no_delay(true), ec);
    if (tls_ != nullptr) {
      // Mutual TLS: the server's certificate must be of the cluster's CA, and ours is checked too.
      result = asio::error::would_block;
      tls_->async_handshake(asio::ssl::stream_base::client, [&](const boost::system::error_code& e) { result = e; });
      if (!RunUntil(deadline)) return Unavailable("tier2 " + name + ": TLS handshake timed out");
      if (result) return Unavailable("tier2 " + name + ": TLS handshake: " + result.message());
    }
    return Status::Ok();
  }

  // Whether the connection, idle in the pool, may carry a call: not when the server has closed it
  // (its idle timeout, a restart) or sent bytes nobody asked for. Does not block. (A server sends
  // no TLS session tickets: cluster/http/tls.h.)
  bool Usable() {
    if (!raw().is_open()) return false;
    char byte;
    const ssize_t n = ::recv(raw().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }

  // Sends `request` and reads the answer.
  StatusOr<pb::Tier2Response> Call(const pb::Tier2Request& request, Clock::time_point deadline,
                                    const std::string& name) {
    std::string out;
    RETURN_IF_ERROR(EncodeFrame(MessageType::kTier2Request, request, &out));
    boost::system::error_code wrote = asio::error::would_block, read = asio::error::would_block;
    char header[kFrameHeaderBytes];
    WithStream([&](auto& stream) {
      asio::async_write(stream, asio::buffer(out), [&](const boost::system::error_code& ec, size_t) { wrote = ec; });
      asio::async_read(stream, asio::buffer(header), [&](const boost::system::error_code& ec, size_t) { read = ec; });
    });
    if (!RunUntil(deadline)) return DeadlineExceeded("tier2 " + name + ": no answer in time");
    if (wrote) return Unavailable("tier2 " + name + ": send: " + wrote.message());
    if (read) return Unavailable("tier2 " + name + ": receive: " + read.message());
    auto h = DecodeFrameHeader(header);
    if (!h.ok() || h->type != MessageType::kTier2Response) {
      return Corruption("tier2 " + name + ": " + (h.ok() ? std::string("a reply that is not a response") : h.status().message()));
    }
    // The body grows as its bytes arrive (twice what came, at least 64 KiB at a time): a header
    // alone cannot make the client reserve the length it declares.
    std::string body;
    for (size_t got = 0; got < h->length;) {
      const size_t want = std::min<size_t>(h->length, std::max<size_t>(2 * got, size_t{64} << 10));
      body.resize(want);
      read = asio::error::would_block;
      size_t n = 0;
      WithStream([&](auto& stream) {
        asio::async_read(stream, asio::buffer(body.data() + got, want - got),
                         [&](const boost::system::error_code& ec, size_t bytes) {
                           read = ec;
                           n = bytes;
                         });
      });
      if (!RunUntil(deadline)) return DeadlineExceeded("tier2 " + name + ": no answer in time");
      if (read) return Unavailable("tier2 " + name + ": receive: " + read.message());
      got += n;
    }
    pb::Tier2Response response;
    if (Status s = DecodeFrameBody(*h, body, &response); !s.ok()) return Corruption("tier2 " + name + ": " + s.message());
    if (response.id() != request.id()) {
      return Corruption("tier2 " + name + ": answer " + std::to_string(response.id()) + " to request " +
                        std::to_string(request.id()));
    }
    return response;
  }

 private:
  // Runs the pending operations until they all finished (true) or the deadline passed (false:
  // they are cancelled by closing the socket, and the connection is not to be used again).
  bool RunUntil(Clock::time_point deadline) {
    io_.restart();
    while (!io_.stopped()) {
      if (io_.run_one_until(deadline) == 0 && !io_.stopped()) {
        if (Clock::now() >= deadline) {
          boost::system::error_code ec;
          raw().close(ec);
          io_.restart();
          io_.run();  // the cancelled handlers
          return false;
        }
      }
    }
    return true;
  }

  // The TCP socket under the stream.
  tcp::socket& raw() { return tls_ != nullptr ? tls_->next_layer() : socket_; }
  // Calls f with the stream the frames go over: TLS's, or the socket.
  template <typename F>
  void WithStream(F&& f) {
    if (tls_ != nullptr) f(*tls_);
    else f(socket_);
  }

  asio::io_context io_;
  tcp::socket socket_;                                       // plain TCP (unused with TLS)
  std::unique_ptr<asio::ssl::stream<tcp::socket>> tls_;      // null: plain TCP
};

// The connections to one server.
class ServerLink {
 public:
  ServerLink(std::string name, tcp::endpoint endpoint, const RemoteShardSetOptions& o,
             std::shared_ptr<asio::ssl::context> tls)
      : name_(std::move(name)), endpoint_(endpoint), options_(o), tls_(std::move(tls)) {}

  // The call with the deadline `timeout_ms` from now (0: call_timeout_ms).
  StatusOr<pb::Tier2Response> Call(pb::Tier2Request request, uint32_t timeout_ms = 0) {
    request.set_id(next_id_.fetch_add(1));
    const Clock::time_point deadline =
        Clock::now() + std::chrono::milliseconds(timeout_ms != 0 ? timeout_ms : options_.call_timeout_ms);
    request.set_deadline_unix_ms(UnixMs(deadline));
    ASSIGN_OR_RETURN(std::unique_ptr<Connection> c, Take());
    auto r = c->Call(request, deadline, name_);
    if (r.ok()) Give(std::move(c));  // a broken connection is dropped
    return r;
  }

 private:
  StatusOr<std::unique_ptr<Connection>> Take() {
    for (;;) {
      std::unique_ptr<Connection> c;
      {
        std::lock_guard lock(mu_);
        if (idle_.empty()) break;
        c = std::move(idle_.back());
        idle_.pop_back();
      }
      if (c->Usable()) return c;  // else closed: the next one, or a new one
    }
    // A new connection, retried with backoff (a server restarting, or not up yet).
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(options_.connect_timeout_ms);
    auto backoff = std::chrono::milliseconds(20);
    for (;;) {
      auto c = std::make_unique<Connection>(tls_);
      Status s = c->Connect(endpoint_, deadline, name_);
      if (s.ok()) return c;
      if (Clock::now() + backoff >= deadline) return s;
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
    }
  }
  void Give(std::unique_ptr<Connection> c) {
    std::lock_guard lock(mu_);
    idle_.push_back(std::move(c));
  }

  const std::string name_;
  const tcp::endpoint endpoint_;
  const RemoteShardSetOptions options_;
  const std::shared_ptr<asio::ssl::context> tls_;  // null: plain TCP
  std::atomic<uint64_t> next_id_{1};
  std::mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_;  // guarded by mu_
};

Status StatusOf(const pb::Tier2Response& r) {
  if (r.code() == 0) return Status::Ok();
  return Status(static_cast<StatusCode>(r.code()), r.message());
}

class RemoteShardSet final : public pipeline::ShardSet {
 public:
  RemoteShardSet(std::vector<std::unique_ptr<ServerLink>> links, std::vector<uint32_t> placement, uint32_t shards)
      : links_(std::move(links)), placement_(std::move(placement)), shards_(shards) {}

  uint32_t size() const override { return shards_; }

  Status Compare(uint32_t shard, std::span<const tier2::ShardPage> pages, double threshold,
                 const tier2::CompareOptions& compare, tier2::CompareResult* out) const override {
    pb::Tier2Request q;
    ToMessage(pages, q.mutable_compare()->mutable_pages());
    q.mutable_compare()->set_threshold(threshold);
    q.mutable_compare()->mutable_stale_url_hashes()->Add(compare.stale_url_hashes.begin(),
                                                         compare.stale_url_hashes.end());
    ASSIGN_OR_RETURN(pb::Tier2Response r, Call(shard, std::move(q)));
    return FromMessage(r.compare(), pages.size(), out);
  }
  Status Stage(uint32_t shard, std::span<const tier2::ShardPage> pages) override {
    pb::Tier2Request q;
    ToMessage(pages, q.mutable_stage()->mutable_pages());
    return Call(shard, std::move(q)).status();
  }
  void Drop(uint32_t shard) override {
    pb::Tier2Request q;
    q.set_drop(true);
    (void)Call(shard, std::move(q));  // an unreachable shard drops it when its connection goes
  }
  Status Publish(uint32_t shard, std::span<const std::string> removed, uint64_t batch) override {
    pb::Tier2Request q;
    q.mutable_publish()->mutable_removed()->Add(removed.begin(), removed.end());
    q.mutable_publish()->set_batch(batch);
    return Call(shard, std::move(q)).status();
  }
  Status Apply(uint32_t shard, std::span<const std::string> removed, uint64_t batch) override {
    pb::Tier2Request q;
    q.mutable_apply()->mutable_removed()->Add(removed.begin(), removed.end());
    q.mutable_apply()->set_batch(batch);
    return Call(shard, std::move(q)).status();
  }
  Status Commit(uint32_t shard) override {
    pb::Tier2Request q;
    q.set_commit(true);
    return Call(shard, std::move(q)).status();
  }
  StatusOr<uint64_t> CommittedBatch(uint32_t shard) const override {
    pb::Tier2Request q;
    q.set_committed_batch(true);
    ASSIGN_OR_RETURN(pb::Tier2Response r, Call(shard, std::move(q)));
    return r.committed_batch();
  }
  StatusOr<pb::PageSignature> Get(uint32_t shard, const std::string& url) const override {
    pb::Tier2Request q;
    q.set_get(url);
    ASSIGN_OR_RETURN(pb::Tier2Response r, Call(shard, std::move(q)));
    return std::move(*r.mutable_signature());
  }
  Status GetMany(uint32_t shard, std::span<const std::string> urls,
                 std::vector<std::optional<pb::PageSignature>>* out) const override {
    pb::Tier2Request q;
    for (const std::string& url : urls) q.mutable_get_many()->add_urls(url);
    ASSIGN_OR_RETURN(pb::Tier2Response r, Call(shard, std::move(q)));
    pb::GetManyResponse& g = *r.mutable_get_many();
    if (static_cast<size_t>(g.signatures_size()) != urls.size() || static_cast<size_t>(g.found_size()) != urls.size()) {
      return Corruption(fmt::format("tier2: shard {} answered {} signatures for {} URLs", shard, g.signatures_size(),
                                    urls.size()));
    }
    out->clear();
    out->reserve(urls.size());
    for (int i = 0; i < g.signatures_size(); ++i) {
      if (g.found(i)) out->push_back(std::move(*g.mutable_signatures(i)));
      else out->push_back(std::nullopt);
    }
    return Status::Ok();
  }
  tier2::ShardStats Stats(uint32_t shard) const override {
    pb::Tier2Request q;
    q.set_stats(true);
    auto r = Call(shard, std::move(q));
    return r.ok() ? FromMessage(r->stats()) : tier2::ShardStats{};
  }

 private:
  // The call on the shard's server; the shard's own error when it answered with one.
  StatusOr<pb::Tier2Response> Call(uint32_t shard, pb::Tier2Request q) const {
    if (shard >= shards_) {
      return InvalidArgument("shard " + std::to_string(shard) + " is not one of the " + std::to_string(shards_));
    }
    q.set_shard(shard);
    ASSIGN_OR_RETURN(pb::Tier2Response r, links_[placement_[shard]]->Call(std::move(q)));
    RETURN_IF_ERROR(StatusOf(r));
    return r;
  }

  std::vector<std::unique_ptr<ServerLink>> links_;
  const std::vector<uint32_t> placement_;  // shard -> index into links_
  const uint32_t shards_;
};

}  // namespace

StatusOr<std::unique_ptr<pipeline::ShardSet>> OpenRemoteShardSet(const RemoteShardSetOptions& remote,
                                                                 const pipeline::ShardSetOptions& options) {
  if (remote.servers.empty()) return InvalidArgument("remote shard set: no servers");
  if (options.shards == 0) return InvalidArgument("remote shard set: no shards");
  std::vector<uint32_t> placement = remote.placement;
  if (placement.empty()) {
    for (uint32_t m = 0; m < options.shards; ++m) placement.push_back(m % static_cast<uint32_t>(remote.servers.size()));
  }
  if (placement.size() < options.shards) {
    return InvalidArgument("remote shard set: a placement of " + std::to_string(placement.size()) + " shards for " +
                           std::to_string(options.shards));
  }
  placement.resize(options.shards);
  for (uint32_t at : placement) {
    if (at >= remote.servers.size()) return InvalidArgument("remote shard set: a placement names server " + std::to_string(at));
  }
  std::shared_ptr<asio::ssl::context> tls;
  if (remote.tls.enabled()) {
    ASSIGN_OR_RETURN(tls, MakeTlsContext(remote.tls, TlsRole::kClient));
  }
  std::vector<std::unique_ptr<ServerLink>> links;
  for (const std::string& s : remote.servers) {
    std::string host;
    uint16_t port = 0;
    RETURN_IF_ERROR(ParseHostPort(s, &host, &port));
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(host, ec);
    if (ec) return InvalidArgument("remote shard set: " + host + " is not an IP address");
    links.push_back(std::make_unique<ServerLink>(s, tcp::endpoint(address, port), remote, tls));
  }
  // Each server opens its shards of the store, at once.
  const size_t n = links.size();
  std::vector<Status> opened(n);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      pb::Tier2Request q;
      pb::OpenShardsRequest* o = q.mutable_open();
      *o->mutable_config() = options.config;
      o->set_shards(options.shards);
      o->mutable_expected_postings()->Add(options.expected_postings.begin(), options.expected_postings.end());
      o->set_read_only(options.read_only);
      for (uint32_t m = 0; m < options.shards; ++m) {
        if (placement[m] == i) o->add_serve(m);
      }
      auto r = links[i]->Call(std::move(q), remote.open_timeout_ms);
      opened[i] = r.ok() ? StatusOf(*r) : r.status();
      if (!opened[i].ok()) opened[i] = Status(opened[i].code(), remote.servers[i] + ": " + opened[i].message());
      if (remote.on_open) {
        for (uint32_t m = 0; m < options.shards; ++m) {
          if (placement[m] == i) remote.on_open(m, opened[i]);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const Status& s : opened) RETURN_IF_ERROR(s);
  return std::unique_ptr<pipeline::ShardSet>(new RemoteShardSet(std::move(links), std::move(placement), options.shards));
}

}  // namespace neardup::cluster
