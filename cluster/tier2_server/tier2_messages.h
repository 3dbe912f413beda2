// The tier2 types in the messages between the tiers (proto/cluster.proto): what a Tier 2 server
// (tier2_service.h) and its client (cluster/tier2_client/remote_shard_set.h) put into a frame's
// body and read out of it.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "common/status.h"
#include "proto/cluster.pb.h"
#include "tier2/shard.h"

namespace neardup::cluster {

void ToMessage(const tier2::CompareResult& r, pb::CompareResponse* out);
// A comparison's answer for a batch of `batch_pages` pages, from a peer: Corruption (and *out
// left empty) when a page index is outside the batch, a batch pair is not a < b, or a similarity
// is not in [0, 1].
Status FromMessage(const pb::CompareResponse& m, size_t batch_pages, tier2::CompareResult* out);
void ToMessage(const tier2::ShardStats& s, pb::ShardStatsMsg* out);
tier2::ShardStats FromMessage(const pb::ShardStatsMsg& m);
// Pages of a request: the signatures stay in `m`, which must outlive the result.
std::vector<tier2::ShardPage> PagesOf(const google::protobuf::RepeatedPtrField<pb::ShardPageMsg>& m);
void ToMessage(std::span<const tier2::ShardPage> pages, google::protobuf::RepeatedPtrField<pb::ShardPageMsg>* out);

}  // namespace neardup::cluster
