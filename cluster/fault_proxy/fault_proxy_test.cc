// The remote shard set through a FaultProxy in front of an in-process Tier 2 server: through a
// proxy that passes everything it gives the embedded groups; a delay past the call's deadline and
// a silent connection are DeadlineExceeded in time; a connection closed, cut or reset is
// Unavailable; and once the proxy passes again the next call succeeds on a new connection.
#include "cluster/fault_proxy/fault_proxy.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "cluster/tier2_client/remote_shard_set.h"
#include "cluster/tier2_server/tier2_server.h"
#include "common/config.h"
#include "pipeline/pipeline_test_util.h"

namespace neardup::cluster {
namespace {

using pipeline::test_util::ReadFile;
using pipeline::test_util::SampleRun;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kCallMs = 400;
// A failed call returns within its deadline plus this (a loaded machine, the sanitizers).
constexpr auto kSlack = std::chrono::milliseconds(1500);

std::string Loopback(uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

// Waits (at most 5 s) until `done`; whether it came.
bool Eventually(const std::function<bool()>& done) {
  for (int i = 0; i < 500; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

TEST(FaultProxy, PassThroughGivesTheEmbeddedGroups) {
  test::TempDir dir;
  auto local = pipeline::RunPipeline(SampleRun(dir, "local"));
  ASSERT_TRUE(local.ok()) << local.status().ToString();

  std::vector<std::unique_ptr<Tier2Server>> servers;
  std::vector<std::unique_ptr<FaultProxy>> proxies;
  RemoteShardSetOptions remote;
  for (int i = 0; i < 2; ++i) {
    Tier2ServerOptions so;
    so.store = dir.File("tier2-" + std::to_string(i));
    auto s = Tier2Server::Start(so);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    FaultProxyOptions po;
    po.target = Loopback((*s)->port());
    auto p = FaultProxy::Start(po);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    remote.servers.push_back(Loopback((*p)->port()));
    servers.push_back(std::move(*s));
    proxies.push_back(std::move(*p));
  }
  pipeline::PipelineOptions o = SampleRun(dir, "remote");
  o.open_shards = [remote](const pipeline::ShardSetOptions& so) { return OpenRemoteShardSet(remote, so); };
  auto r = pipeline::RunPipeline(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ReadFile(o.groups_out), ReadFile(SampleRun(dir, "local").groups_out));
  EXPECT_EQ(ReadFile(o.status_out), ReadFile(SampleRun(dir, "local").status_out));
  EXPECT_EQ(r->groups, local->groups);
  for (const auto& p : proxies) {
    EXPECT_GE(p->connections(), 1u);
    EXPECT_GT(p->bytes_to_server(), 0u);
    EXPECT_GT(p->bytes_to_client(), 0u);
  }
  // The run closed its set: the proxies see every connection end.
  for (const auto& p : proxies) EXPECT_TRUE(Eventually([&] { return p->open_connections() == 0; }));
}

TEST(FaultProxy, BadAddressesAreRefused) {
  FaultProxyOptions po;
  EXPECT_EQ(FaultProxy::Start(po).status().code(), StatusCode::kInvalidArgument);  // no target
  po.target = "localhost:80";
  EXPECT_EQ(FaultProxy::Start(po).status().code(), StatusCode::kInvalidArgument);  // not an IP
  po.target = "127.0.0.1:80";
  po.listen = "127.0.0.1";
  EXPECT_EQ(FaultProxy::Start(po).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseFaultMode("reset").value(), FaultMode::kReset);
  EXPECT_FALSE(ParseFaultMode("cut").ok());
  EXPECT_EQ(ParseFaultDirection("to-client").value(), FaultDirection::kToClient);
  EXPECT_FALSE(ParseFaultDirection("up").ok());
}

// One Tier 2 server holding the only shard of a store, reached through a proxy with short
// deadlines.
class FaultProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Tier2ServerOptions so;
    so.store = dir_.File("tier2");
    auto s = Tier2Server::Start(so);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
    FaultProxyOptions po;
    po.target = Loopback(server_->port());
    auto p = FaultProxy::Start(po);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    proxy_ = std::move(*p);
    set_ = Open(kCallMs);
    ASSERT_NE(set_, nullptr);
  }

  std::unique_ptr<pipeline::ShardSet> Open(uint32_t call_ms) {
    RemoteShardSetOptions remote;
    remote.servers = {Loopback(proxy_->port())};
    remote.connect_timeout_ms = 500;
    remote.call_timeout_ms = call_ms;
    remote.open_timeout_ms = 30000;  // creating the shard may take longer, under the sanitizers
    pipeline::ShardSetOptions options;
    options.config = DefaultConfig();
    options.config.mutable_tier2()->set_sync(false);
    options.shards = 1;
    auto set = OpenRemoteShardSet(remote, options);
    EXPECT_TRUE(set.ok()) << set.status().ToString();
    return set.ok() ? std::move(*set) : nullptr;
  }

  // One call (the committed batch of shard 0): its status, and how long it took in *took.
  Status Call(Clock::duration* took = nullptr) {
    const auto start = Clock::now();
    auto r = set_->CommittedBatch(0);
    if (took != nullptr) *took = Clock::now() - start;
    if (r.ok() && *r != 0) return Internal("committed batch " + std::to_string(*r) + ", not 0");
    return r.status();
  }

  // The call fails with `code` within the deadline (and the slack); the proxy passes again, and
  // the next call succeeds.
  void FailsThenRecovers(StatusCode code, const std::string& what) {
    SCOPED_TRACE(what);
    Clock::duration took{};
    Status s = Call(&took);
    EXPECT_EQ(s.code(), code) << s.ToString();
    EXPECT_NE(s.message().find(Loopback(proxy_->port())), std::string::npos) << s.ToString();
    EXPECT_LT(took, std::chrono::milliseconds(kCallMs) + kSlack);
    proxy_->SetFaults({});
    s = Call();
    EXPECT_TRUE(s.ok()) << s.ToString();
  }

  test::TempDir dir_;
  std::unique_ptr<Tier2Server> server_;
  std::unique_ptr<FaultProxy> proxy_;
  std::unique_ptr<pipeline::ShardSet> set_;
};

TEST_F(FaultProxyTest, DelayPastTheDeadlineIsDeadlineExceededThenANewConnectionWorks) {
  ASSERT_TRUE(Call().ok());
  const uint64_t before = proxy_->connections();
  proxy_->SetFaults({.delay_ms = 3 * kCallMs});
  Clock::duration took{};
  Status s = Call(&took);
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  EXPECT_GE(took, std::chrono::milliseconds(kCallMs) - std::chrono::milliseconds(50));
  EXPECT_LT(took, std::chrono::milliseconds(kCallMs) + kSlack);
  // A delay inside the deadline is only slower.
  proxy_->SetFaults({.delay_ms = kCallMs / 8});
  s = Call();
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(proxy_->connections(), before + 1);  // the timed-out connection was replaced
  proxy_->SetFaults({});
  EXPECT_TRUE(Call().ok());
}

TEST_F(FaultProxyTest, BlackholeIsDeadlineExceededWithinTheDeadline) {
  ASSERT_TRUE(Call().ok());
  proxy_->SetFaults({.mode = FaultMode::kBlackhole});  // the pooled connection goes silent
  FailsThenRecovers(StatusCode::kDeadlineExceeded, "blackhole on an open connection");
  proxy_->SetFaults({.mode = FaultMode::kBlackhole, .direction = FaultDirection::kToClient});
  FailsThenRecovers(StatusCode::kDeadlineExceeded, "the answers thrown away");
}

TEST_F(FaultProxyTest, DroppedConnectionsAreUnavailable) {
  ASSERT_TRUE(Call().ok());
  proxy_->SetFaults({.mode = FaultMode::kDrop});
  FailsThenRecovers(StatusCode::kUnavailable, "the pooled connection closed at its next chunk");
  proxy_->SetFaults({.mode = FaultMode::kDrop});
  ASSERT_EQ(Call().code(), StatusCode::kUnavailable);  // the pooled one again
  FailsThenRecovers(StatusCode::kUnavailable, "a new connection closed as it is accepted");
}

TEST_F(FaultProxyTest, TruncatedConnectionsAreUnavailable) {
  ASSERT_TRUE(Call().ok());
  // The pooled connection has carried more than any of these: its next chunk closes it, and the
  // next call opens a new one, cut where asked.
  for (uint64_t after : {0, 5, 12, 14}) {
    proxy_->SetFaults({.mode = FaultMode::kTruncate, .after_bytes = after, .direction = FaultDirection::kToClient});
    ASSERT_EQ(Call().code(), StatusCode::kUnavailable);
    FailsThenRecovers(StatusCode::kUnavailable, "the answer cut after " + std::to_string(after) + " bytes");
  }
  for (uint64_t after : {0, 7, 12}) {
    proxy_->SetFaults({.mode = FaultMode::kTruncate, .after_bytes = after, .direction = FaultDirection::kToServer});
    ASSERT_EQ(Call().code(), StatusCode::kUnavailable);
    FailsThenRecovers(StatusCode::kUnavailable, "the request cut after " + std::to_string(after) + " bytes");
  }
}

TEST_F(FaultProxyTest, ResetConnectionsAreUnavailable) {
  ASSERT_TRUE(Call().ok());
  proxy_->SetFaults({.mode = FaultMode::kReset});  // the pooled connection at its next chunk
  FailsThenRecovers(StatusCode::kUnavailable, "reset at the next chunk");
  proxy_->SetFaults({.mode = FaultMode::kReset});
  ASSERT_EQ(Call().code(), StatusCode::kUnavailable);
  FailsThenRecovers(StatusCode::kUnavailable, "reset as it is accepted");
  for (uint64_t after : {5, 14}) {
    proxy_->SetFaults({.mode = FaultMode::kReset, .after_bytes = after, .direction = FaultDirection::kToClient});
    ASSERT_EQ(Call().code(), StatusCode::kUnavailable);
    FailsThenRecovers(StatusCode::kUnavailable, "the answer reset after " + std::to_string(after) + " bytes");
  }
}

// Faults switched on and off while calls run on several threads: every call ends in time, with an
// answer or a transport error, and the set is whole afterwards.
TEST_F(FaultProxyTest, FaultsChangingUnderConcurrentCallsNeverHang) {
  std::atomic<bool> done{false};
  std::atomic<int> ok{0}, failed{0}, late{0}, other{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t) {
    callers.emplace_back([&] {
      while (!done.load()) {
        Clock::duration took{};
        const Status s = Call(&took);
        if (took >= std::chrono::milliseconds(kCallMs) + kSlack) late.fetch_add(1);
        if (s.ok()) ok.fetch_add(1);
        else if (s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kDeadlineExceeded) failed.fetch_add(1);
        else other.fetch_add(1);
      }
    });
  }
  const FaultProxyFaults faults[] = {
      {.mode = FaultMode::kDrop},
      {.mode = FaultMode::kBlackhole},
      {.mode = FaultMode::kTruncate, .after_bytes = 9},
      {.mode = FaultMode::kReset, .after_bytes = 30},
      {.delay_ms = kCallMs},
      {.mode = FaultMode::kReset},
  };
  for (const auto& f : faults) {
    proxy_->SetFaults(f);
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    proxy_->SetFaults({});
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  done.store(true);
  for (auto& t : callers) t.join();
  EXPECT_GT(ok.load(), 0);
  EXPECT_GT(failed.load(), 0);
  EXPECT_EQ(late.load(), 0);
  EXPECT_EQ(other.load(), 0);
  Status s = Call();
  EXPECT_TRUE(s.ok()) << s.ToString();
}

// Stop closes the connections at once: a call waiting on a silent connection learns it long
// before its deadline.
TEST_F(FaultProxyTest, StopClosesConnectionsPromptly) {
  auto patient = Open(30000);
  ASSERT_NE(patient, nullptr);
  proxy_->SetFaults({.mode = FaultMode::kBlackhole});
  Status s;
  Clock::duration took{};
  std::thread caller([&] {
    const auto start = Clock::now();
    s = patient->CommittedBatch(0).status();
    took = Clock::now() - start;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the call is waiting
  const auto start = Clock::now();
  proxy_->Stop();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  caller.join();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_LT(took, std::chrono::seconds(5));
  proxy_->Stop();  // again: nothing
}

}  // namespace
}  // namespace neardup::cluster
