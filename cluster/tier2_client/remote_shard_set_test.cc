// Tier 2 on the network, in one process: Tier 2 servers on loopback, the pipeline driving them
// through a RemoteShardSet, with the groups the in-process shards give.
#include "cluster/tier2_client/remote_shard_set.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "cluster/tier2_server/tier2_server.h"
#include "common/config.h"
#include "pipeline/pipeline_test_util.h"

namespace neardup::cluster {
namespace {

using pipeline::test_util::ReadFile;
using pipeline::test_util::SampleRun;

TEST(RemoteShardSet, PipelineOverTwoServersGivesTheEmbeddedGroups) {
  test::TempDir dir;
  auto local = pipeline::RunPipeline(SampleRun(dir, "local"));
  ASSERT_TRUE(local.ok()) << local.status().ToString();

  std::vector<std::unique_ptr<Tier2Server>> servers;
  RemoteShardSetOptions remote;
  for (int i = 0; i < 2; ++i) {
    Tier2ServerOptions so;
    so.store = dir.File("tier2-" + std::to_string(i));
    auto s = Tier2Server::Start(so);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    remote.servers.push_back("127.0.0.1:" + std::to_string((*s)->port()));
    servers.push_back(std::move(*s));
  }
  pipeline::PipelineOptions o = SampleRun(dir, "remote");
  o.open_shards = [remote](const pipeline::ShardSetOptions& so) { return OpenRemoteShardSet(remote, so); };
  auto r = pipeline::RunPipeline(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ReadFile(o.groups_out), ReadFile(SampleRun(dir, "local").groups_out));
  EXPECT_EQ(ReadFile(o.status_out), ReadFile(SampleRun(dir, "local").status_out));
  EXPECT_EQ(r->groups, local->groups);
  EXPECT_EQ(r->shard_pages, local->shard_pages);  // the shards' stats come over the network too
  // The shards live in the servers' stores: shards 0 and 2 in the first, 1 in the second.
  EXPECT_TRUE(std::filesystem::exists(dir.File("tier2-0/shard-000")));
  EXPECT_TRUE(std::filesystem::exists(dir.File("tier2-1/shard-001")));
  EXPECT_TRUE(std::filesystem::exists(dir.File("tier2-0/shard-002")));
}

TEST(RemoteShardSet, UnreachableServerIsUnavailableAndNamed) {
  test::TempDir dir;
  Tier2ServerOptions so;
  so.store = dir.File("tier2");
  auto s = Tier2Server::Start(so);
  ASSERT_TRUE(s.ok());
  const std::string address = "127.0.0.1:" + std::to_string((*s)->port());
  (*s)->Stop();
  RemoteShardSetOptions remote;
  remote.servers = {address};
  remote.connect_timeout_ms = 300;
  remote.call_timeout_ms = 2000;
  pipeline::ShardSetOptions options;
  options.config = DefaultConfig();
  options.shards = 1;
  auto set = OpenRemoteShardSet(remote, options);
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(set.status().message().find(address), std::string::npos) << set.status().ToString();
}

// A server restarted on the same port closed the set's pooled connection: the next call notices
// and opens a new one instead of failing.
// GetMany over the network answers as the in-process shards do, URL by URL, in order: the
// signatures a shard holds, nothing for the URLs it does not.
TEST(RemoteShardSet, GetManyAnswersAsTheLocalShardsInOneCall) {
  test::TempDir dir;
  pipeline::PipelineOptions o = SampleRun(dir, "remote");
  Tier2ServerOptions so;
  so.store = dir.File("tier2");
  auto s = Tier2Server::Start(so);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  RemoteShardSetOptions remote;
  remote.servers = {"127.0.0.1:" + std::to_string((*s)->port())};
  o.open_shards = [remote](const pipeline::ShardSetOptions& x) { return OpenRemoteShardSet(remote, x); };
  ASSERT_TRUE(pipeline::RunPipeline(o).ok());
  pipeline::ShardSetOptions options;
  options.config = o.config;
  // The store's parameters: its shards are cut for its threshold.
  options.config.mutable_tier2()->set_min_threshold(o.threshold);
  options.shards = 3;
  auto set = OpenRemoteShardSet(remote, options);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  // Every URL of the crawl asked of shard 1, and one no shard holds.
  std::vector<std::string> urls;
  std::istringstream lines(ReadFile(o.input));
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find("\"url\":\"") + 7;
    urls.push_back(line.substr(at, line.find('"', at) - at));
  }
  urls.push_back("https://nowhere.example/");
  std::vector<std::optional<pb::PageSignature>> many;
  ASSERT_TRUE((*set)->GetMany(1, urls, &many).ok());
  ASSERT_EQ(many.size(), urls.size());
  size_t found = 0;
  for (size_t i = 0; i < urls.size(); ++i) {
    auto one = (*set)->Get(1, urls[i]);
    ASSERT_EQ(many[i].has_value(), one.ok()) << urls[i];
    if (!one.ok()) continue;
    ++found;
    EXPECT_EQ(many[i]->SerializeAsString(), one->SerializeAsString()) << urls[i];
  }
  EXPECT_GT(found, 100u);
  EXPECT_FALSE(many.back().has_value());
}

TEST(RemoteShardSet, PooledConnectionOfARestartedServerIsReplaced) {
  test::TempDir dir;
  Tier2ServerOptions so;
  so.store = dir.File("tier2");
  auto s = Tier2Server::Start(so);
  ASSERT_TRUE(s.ok());
  RemoteShardSetOptions remote;
  remote.servers = {"127.0.0.1:" + std::to_string((*s)->port())};
  remote.connect_timeout_ms = 2000;
  remote.call_timeout_ms = 5000;
  pipeline::ShardSetOptions options;
  options.config = DefaultConfig();
  options.config.mutable_tier2()->set_sync(false);
  options.shards = 1;
  auto set = OpenRemoteShardSet(remote, options);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  ASSERT_TRUE((*set)->CommittedBatch(0).ok());
  (*s)->Stop();
  so.listen = remote.servers[0];
  s = Tier2Server::Start(so);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the close has reached the client
  // The new server has no shards open: the call reaches it and is answered so.
  auto batch = (*set)->CommittedBatch(0);
  EXPECT_EQ(batch.status().code(), StatusCode::kFailedPrecondition) << batch.status().ToString();
}

// The server closes a pooled connection that stayed idle too long: the next call notices and
// opens a new one instead of failing.
TEST(RemoteShardSet, PooledConnectionClosedByTheServerIsReplaced) {
  test::TempDir dir;
  Tier2ServerOptions so;
  so.store = dir.File("tier2");
  so.idle_timeout_ms = 100;
  auto s = Tier2Server::Start(so);
  ASSERT_TRUE(s.ok());
  RemoteShardSetOptions remote;
  remote.servers = {"127.0.0.1:" + std::to_string((*s)->port())};
  remote.connect_timeout_ms = 2000;
  remote.call_timeout_ms = 5000;
  pipeline::ShardSetOptions options;
  options.config = DefaultConfig();
  options.config.mutable_tier2()->set_sync(false);
  options.shards = 1;
  auto set = OpenRemoteShardSet(remote, options);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the pooled connection is closed
    auto batch = (*set)->CommittedBatch(0);
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    EXPECT_EQ(*batch, 0u);
  }
}

// The open has its own deadline: a set whose calls must answer within a millisecond still opens
// (creating the shard takes longer).
TEST(RemoteShardSet, OpenHasItsOwnDeadline) {
  test::TempDir dir;
  Tier2ServerOptions so;
  so.store = dir.File("tier2");
  auto s = Tier2Server::Start(so);
  ASSERT_TRUE(s.ok());
  RemoteShardSetOptions remote;
  remote.servers = {"127.0.0.1:" + std::to_string((*s)->port())};
  remote.call_timeout_ms = 1;
  remote.open_timeout_ms = 30000;
  pipeline::ShardSetOptions options;
  options.config = DefaultConfig();
  options.shards = 2;
  auto set = OpenRemoteShardSet(remote, options);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_TRUE(std::filesystem::exists(dir.File("tier2/shard-001")));
}

}  // namespace
}  // namespace neardup::cluster
