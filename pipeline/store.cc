#include "pipeline/store.h"

#include "tier2/local_shards.h"

#include <algorithm>
#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

namespace neardup::pipeline {
namespace {

std::string Value(double v) { return fmt::format("{}", v); }
std::string Value(uint32_t v) { return std::to_string(v); }
std::string Value(const std::string& v) { return "\"" + v + "\""; }

}  // namespace

std::string StoreLayout::shard(uint32_t m) const { return tier2::ShardDir(dir, m); }

pb::StoreParams ParamsFromConfig(const pb::NeardupConfig& config, double threshold) {
  pb::StoreParams p;
  p.set_threshold(threshold);
  p.set_shingle_k(config.shingle().k());
  p.set_dims(config.shingle().dims());
  p.set_routing(config.pipeline().routing());
  p.set_rho(config.pipeline().rho());
  p.set_shards(config.pipeline().shards());
  // The store is only ever asked for its own threshold: its shards' index is cut for it.
  p.set_min_threshold(std::max(config.tier2().min_threshold(), threshold));
  p.set_prefix_overlap(config.tier2().prefix_overlap());
  return p;
}

Status CheckGivenParams(const pb::StoreParams& stored, const pb::StoreParams& requested, const GivenParams& given,
                        const std::string& store) {
  auto check = [&](const char* name, const auto& have, const auto& want) -> Status {
    auto it = given.find(name);
    if (it == given.end() || have == want) return Status::Ok();
    return FailedPrecondition(fmt::format(
        "store {} was built with {} {} (recorded in its first commit), but {} asks for {}; every command on this "
        "store uses the store's value: leave the setting out, or build a new --store",
        store, name, Value(have), it->second, Value(want)));
  };
  RETURN_IF_ERROR(check("threshold", stored.threshold(), requested.threshold()));
  RETURN_IF_ERROR(check("shingle_k", stored.shingle_k(), requested.shingle_k()));
  RETURN_IF_ERROR(check("dims", stored.dims(), requested.dims()));
  RETURN_IF_ERROR(check("routing", stored.routing(), requested.routing()));
  // rho matters only to rho routing.
  if (stored.routing() == "rho") RETURN_IF_ERROR(check("rho", stored.rho(), requested.rho()));
  RETURN_IF_ERROR(check("shards", stored.shards(), requested.shards()));
  // An index cut for a lower threshold answers every higher one.
  if (stored.min_threshold() > requested.min_threshold()) {
    RETURN_IF_ERROR(check("min_threshold", stored.min_threshold(), requested.min_threshold()));
  }
  RETURN_IF_ERROR(check("prefix_overlap", stored.prefix_overlap(), requested.prefix_overlap()));
  return Status::Ok();
}

void ApplyParams(const pb::StoreParams& p, pb::NeardupConfig* config, double* threshold, SignerOptions* signer) {
  *threshold = p.threshold();
  config->mutable_baseline()->set_threshold(p.threshold());
  config->mutable_shingle()->set_k(p.shingle_k());
  config->mutable_shingle()->set_dims(p.dims());
  config->mutable_pipeline()->set_routing(p.routing());
  config->mutable_pipeline()->set_rho(p.rho());
  config->mutable_pipeline()->set_shards(p.shards());
  config->mutable_tier2()->set_min_threshold(p.min_threshold());
  config->mutable_tier2()->set_prefix_overlap(p.prefix_overlap());
  signer->k = static_cast<int>(p.shingle_k());
  signer->dims = static_cast<int>(p.dims());
}

Status CheckMapFits(const partitioner::PartitionMap& map, const pb::StoreParams& p, const std::string& what) {
  const pb::PartitionMap& m = map.proto();
  auto bad = [&](const char* name, const std::string& have, const std::string& want) {
    return FailedPrecondition(fmt::format("partition map {} was built for {} {}, but the store's {} is {}; build the "
                                          "map with the store's value, or give the map's",
                                          what, name, have, name, want));
  };
  if (m.threshold() != p.threshold()) return bad("threshold", Value(m.threshold()), Value(p.threshold()));
  if (m.shingle_k() != p.shingle_k()) return bad("shingle_k", Value(m.shingle_k()), Value(p.shingle_k()));
  if (m.dims() != p.dims()) return bad("dims", Value(m.dims()), Value(p.dims()));
  const std::string routing = m.routing() == pb::PartitionMap::RHO_BOX ? "rho" : "exact";
  if (routing != p.routing()) return bad("routing", Value(routing), Value(p.routing()));
  if (routing == "rho" && m.rho() != p.rho()) return bad("rho", Value(m.rho()), Value(p.rho()));
  return Status::Ok();
}

uint64_t MapDigest(const partitioner::PartitionMap& map) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream out(&bytes);
    google::protobuf::io::CodedOutputStream coded(&out);
    coded.SetSerializationDeterministic(true);
    map.proto().SerializeToCodedStream(&coded);
  }
  return XXH3_64bits(bytes.data(), bytes.size());
}

StatusOr<pb::StoreParams> ReadStoreParams(const tier1::GroupStore& store) {
  std::string bytes;
  RETURN_IF_ERROR(store.rows().Get(store.meta_family(), "params", "", &bytes));
  pb::StoreParams p;
  if (!p.ParseFromString(bytes)) return Corruption("group store: unreadable parameters record");
  return p;
}

Status WriteStoreParams(tier1::GroupStore* store, const pb::StoreParams& p) {
  RowBatch b;
  b.Put(store->meta_family(), "params", "", p.SerializeAsString());
  RETURN_IF_ERROR(store->rows().Write(b));
  return store->rows().WaitForWrites();
}

// ---- PrefixDigest ------------------------------------------------------------------------------

StatusOr<std::unique_ptr<PrefixDigest>> PrefixDigest::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot open " + path + ": " + std::strerror(errno));
  return std::unique_ptr<PrefixDigest>(new PrefixDigest(fd, path));
}

PrefixDigest::PrefixDigest(int fd, std::string path) : fd_(fd), path_(std::move(path)), state_(XXH3_createState()) {
  XXH3_128bits_reset(static_cast<XXH3_state_t*>(state_));
}

PrefixDigest::~PrefixDigest() {
  ::close(fd_);
  XXH3_freeState(static_cast<XXH3_state_t*>(state_));
}

Status PrefixDigest::Advance(uint64_t to) {
  if (to < position_) return Internal("PrefixDigest: cannot go back from " + std::to_string(position_));
  std::vector<char> buf(std::min<uint64_t>(to - position_, 1 << 20));
  while (position_ < to) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), to - position_));
    const ssize_t got = ::pread(fd_, buf.data(), want, static_cast<off_t>(position_));
    if (got < 0) {
      if (errno == EINTR) continue;
      return IoError("cannot read " + path_ + ": " + std::strerror(errno));
    }
    if (got == 0) {
      return IoError(fmt::format("{} ends at {} bytes, before {}", path_, position_, to));
    }
    XXH3_128bits_update(static_cast<XXH3_state_t*>(state_), buf.data(), static_cast<size_t>(got));
    position_ += static_cast<uint64_t>(got);
  }
  return Status::Ok();
}

void PrefixDigest::Get(uint64_t* lo, uint64_t* hi) const {
  const XXH128_hash_t h = XXH3_128bits_digest(static_cast<const XXH3_state_t*>(state_));
  *lo = h.low64;
  *hi = h.high64;
}

}  // namespace neardup::pipeline
