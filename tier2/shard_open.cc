// Shard::Open: the options checked, the store locked, its meta compared (or written), its token
// order read, the committed log replayed into slots and the index rebuilt from it.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/config.h"
#include "tier2/shard_impl.h"

namespace neardup::tier2 {

namespace {

// The ranges of the configuration fields the options come from (proto/config.proto).
Status CheckShardOptions(const ShardOptions& o) {
  if (o.path.empty()) return InvalidArgument("shard: path is empty");
  // The ranges of the configuration fields these options come from (proto/config.proto).
  if (auto rule = ConfigRangeError("shingle.dims", o.dims); !rule.empty()) {
    return InvalidArgument("shard: dims " + rule + ", got " + std::to_string(o.dims));
  }
  if (auto rule = ConfigRangeError("tier2.min_threshold", o.min_threshold); !rule.empty()) {
    return InvalidArgument("shard: min_threshold " + rule + ", got " + std::to_string(o.min_threshold));
  }
  if (auto rule = ConfigRangeError("tier2.prefix_overlap", o.prefix_overlap); !rule.empty()) {
    return InvalidArgument("shard: prefix_overlap " + rule + ", got " + std::to_string(o.prefix_overlap));
  }
  if (auto rule = ConfigRangeError("tier2.max_batch_pages", o.max_batch_pages); !rule.empty()) {
    return InvalidArgument("shard: max_batch_pages " + rule + ", got " + std::to_string(o.max_batch_pages));
  }
  if (o.threads < 1) return InvalidArgument("shard: threads must be >= 1");
  return Status::Ok();
}

}  // namespace

Status Shard::Impl::Open() {
  const ShardOptions& o = options_;
  RETURN_IF_ERROR(CheckShardOptions(o));
  const auto t0 = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(LockStore());
  RETURN_IF_ERROR(OpenMeta());
  RETURN_IF_ERROR(ReadTokenOrder());
  RETURN_IF_ERROR(OpenLog());
  RETURN_IF_ERROR(ReplayLog());
  RETURN_IF_ERROR(BuildIndexForResident());
  rebuilds_ = 0;
  if (order_derived_) ScheduleRefresh();
  open_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Status::Ok();
}

Status Shard::Impl::LockStore() {
  const ShardOptions& o = options_;
  if (o.read_only) {
    if (!env_->Exists(File(kMetaFile))) return NotFound("shard: " + o.path + " holds no shard store");
  } else if (Status s = env_->CreateDirs(o.path); !s.ok()) {
    return IoError("shard: " + s.message());
  }
  auto lock = env_->LockFile(File(kLockFile), /*shared=*/o.read_only);
  if (lock.status().code() == StatusCode::kFailedPrecondition) {
    return IoError("shard: " + o.path + " is open elsewhere (" + lock.status().message() + ")");
  }
  if (!lock.ok()) return IoError("shard: " + lock.status().message());
  lock_ = std::move(*lock);
  return Status::Ok();
}

Status Shard::Impl::OpenMeta() {
  const ShardOptions& o = options_;
  // Meta: written when the store is made (after its first commit, so a store with meta has a
  // commit file), compared on every later open.
  pb::ShardMeta want;
  want.set_format_version(kFormatVersion);
  want.set_dims(o.dims);
  want.set_shingle_k(o.shingle_k);
  want.set_min_threshold(o.min_threshold);
  want.set_prefix_overlap(o.prefix_overlap);
  std::string v;
  Status meta = ReadWholeFile(env_, File(kMetaFile), &v);
  if (meta.code() == StatusCode::kNotFound) {
    if (o.read_only) return NotFound("shard: " + o.path + " holds no shard store");
    if (env_->Exists(File("CURRENT"))) {
      return FailedPrecondition("shard: " + o.path +
                                " was built with format version 3 or earlier (records in LevelDB), opened with " +
                                std::to_string(kFormatVersion) + "; build a new store");
    }
    ASSIGN_OR_RETURN(commits_, CommitFile::Create(env_, File(kCommitFile), CommitFile::Record{}, o.sync));
    RETURN_IF_ERROR(WriteFileAtomically(env_, File(kMetaFile), want.SerializeAsString(), o.sync));
  } else {
    if (!meta.ok()) return IoError("shard: read meta: " + meta.message());
    pb::ShardMeta have;
    if (!have.ParseFromString(v)) return Corruption("shard: " + File(kMetaFile) + " is not a ShardMeta");
    auto mismatch = [&](const char* what, const std::string& stored, const std::string& asked) {
      return FailedPrecondition("shard: " + o.path + " was built with " + what + " " + stored + ", opened with " +
                                asked + "; use the same value or a new store");
    };
    if (have.format_version() != kFormatVersion) {
      return mismatch("format version", std::to_string(have.format_version()), std::to_string(kFormatVersion));
    }
    if (have.dims() != o.dims) return mismatch("dims", std::to_string(have.dims()), std::to_string(o.dims));
    if (have.shingle_k() != o.shingle_k) {
      return mismatch("shingle k", std::to_string(have.shingle_k()), std::to_string(o.shingle_k));
    }
    if (have.min_threshold() != o.min_threshold) {
      return mismatch("min_threshold", std::to_string(have.min_threshold()), std::to_string(o.min_threshold));
    }
    if (have.prefix_overlap() != o.prefix_overlap) {
      return mismatch("prefix_overlap", std::to_string(have.prefix_overlap()), std::to_string(o.prefix_overlap));
    }
    auto commits = CommitFile::Open(env_, File(kCommitFile));
    if (commits.status().code() == StatusCode::kNotFound) {
      return Corruption("shard: " + o.path + " has its meta file but no commit file");
    }
    if (!commits.ok()) return Status(commits.status().code(), "shard: " + commits.status().message());
    commits_ = std::move(*commits);
  }
  return Status::Ok();
}

Status Shard::Impl::ReadTokenOrder() {
  const ShardOptions& o = options_;
  std::string v;
  // The token order, once the shard has derived one.
  Status order = ReadWholeFile(env_, File(kOrderFile), &v);
  if (order.ok()) {
    auto parsed = TokenOrder::Deserialize(v);
    if (!parsed.ok()) return Corruption("shard: " + File(kOrderFile) + ": " + parsed.status().message());
    order_ = std::move(*parsed);
    order_derived_ = true;
  } else if (order.code() != StatusCode::kNotFound) {
    return IoError("shard: read the token order: " + order.message());
  } else if (!o.initial_order.empty()) {
    auto parsed = TokenOrder::Deserialize(o.initial_order);
    if (!parsed.ok()) return InvalidArgument("shard: initial token order: " + parsed.status().message());
    order_ = std::move(*parsed);
  }
  return Status::Ok();
}

Status Shard::Impl::BuildIndexForResident() {
  const ShardOptions& o = options_;
  // Size the bucket table for the resident pages (a signature record holds ~8 bytes a shingle)
  // or for what is expected, whichever is more.
  uint64_t resident_postings = 0;
  for (uint32_t slot = 0; slot < loc_.size(); ++slot) {
    if (HasLocation(slot)) {
      resident_postings += PrefixLength(Location(slot).length / 8, o.min_threshold, o.prefix_overlap);
    }
  }
  const uint64_t expected = std::max<uint64_t>(
      resident_postings, o.expected_postings > 0
                      ? o.expected_postings
                      : static_cast<uint64_t>(o.expected_pages) * PrefixLength(200, o.min_threshold, o.prefix_overlap));
  return RebuildIndex(PrefixIndex::BucketBitsFor(expected));
}

Status Shard::Impl::OpenLog() {
  log_generation_ = commits_->last().generation;
  const uint64_t end = commits_->last().end;
  // Other generations are left over from a log compaction that stopped before or after its commit.
  const std::string current = LogFileName(log_generation_);
  std::vector<std::string> names;
  if (!options_.read_only && env_->ListDir(options_.path, &names).ok()) {
    for (const std::string& name : names) {
      // (and temporary files of an atomic write that stopped before its rename)
      if ((name != current && name.starts_with("sigs-") && name.ends_with(".log")) || name.ends_with(".tmp")) {
        (void)env_->Remove((std::filesystem::path(options_.path) / name).string());  // the next Open retries
      }
    }
  }
  ASSIGN_OR_RETURN(log_, SignatureLog::Open(env_, (std::filesystem::path(options_.path) / current).string(), end,
                                            options_.read_only));
  return Status::Ok();
}

Status Shard::Impl::ReplayLog() {
  loc_.clear();
  long_length_.clear();
  log_live_bytes_ = 0;
  url_slots_.Clear();
  // Each URL's last page record, unless a removal record came after it.
  std::unordered_map<std::string, SignatureLog::Ref, UrlHasher, std::equal_to<>> live;
  RETURN_IF_ERROR(log_->Scan([&](SignatureLog::Ref ref, std::string_view payload) -> Status {
    std::string_view url;
    if (PageRecordUrl(payload, &url)) {
      live.insert_or_assign(std::string(url), ref);
    } else if (payload.size() > 1 && payload[0] == kRemovalRecord) {
      if (auto it = live.find(payload.substr(1)); it != live.end()) live.erase(it);
    } else {
      return Corruption("shard: " + log_->path() + ": the record at offset " + std::to_string(ref.offset) +
                        " is neither a page nor a removal");
    }
    return Status::Ok();
  }));
  // Slots in log order: the rebuild then reads the log front to back.
  std::vector<const std::pair<const std::string, SignatureLog::Ref>*> pages;
  pages.reserve(live.size());
  for (const auto& e : live) pages.push_back(&e);
  std::sort(pages.begin(), pages.end(), [](auto* a, auto* b) { return a->second.offset < b->second.offset; });
  for (uint32_t slot = 0; slot < pages.size(); ++slot) {
    const auto& [url, ref] = *pages[slot];
    SetLocation(slot, ref);
    log_live_bytes_ += ref.bytes();
    url_slots_.AddResident(url, slot);
  }
  return Status::Ok();
}

}  // namespace neardup::tier2
