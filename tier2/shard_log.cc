// The shard's signature log: where each slot's record is, reading records back, the commit record,
// cutting back an append that will not be committed, and compaction into the next generation.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "tier2/shard_impl.h"

namespace neardup::tier2 {

bool PageRecordUrl(std::string_view payload, std::string_view* url) {
  if (payload.size() < 2 || payload[0] != kPageRecord) return false;
  const std::string_view sig = payload.substr(1);
  if (static_cast<uint8_t>(sig[0]) != 0x0A) return false;
  uint64_t n = 0;
  size_t i = 1;
  for (int shift = 0; i < sig.size() && shift < 35; shift += 7) {
    const auto b = static_cast<uint8_t>(sig[i++]);
    n |= static_cast<uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) {
      if (n == 0 || n > sig.size() - i) return false;
      *url = sig.substr(i, n);
      return true;
    }
  }
  return false;
}

bool ParsePageRecord(std::string_view payload, pb::PageSignature* sig) {
  return !payload.empty() && payload[0] == kPageRecord &&
         sig->ParseFromArray(payload.data() + 1, static_cast<int>(payload.size() - 1));
}


void Shard::Impl::SetLocation(uint32_t slot, const SignatureLog::Ref& ref) {
  if (slot >= loc_.size()) GrowTo<uint64_t>(&loc_, GrownSize(loc_.size(), size_t{slot} + 1), kNoRecord);
  if (ref.length >= kLongLength) {
    long_length_[slot] = ref.length;
  } else {
    long_length_.erase(slot);
  }
  loc_[slot] = ref.offset << kLengthBits | std::min<uint32_t>(ref.length, kLongLength);
}

SignatureLog::Ref Shard::Impl::Location(uint32_t slot) const {
  const uint64_t v = loc_[slot];
  uint32_t length = static_cast<uint32_t>(v & kLongLength);
  if (length == kLongLength) length = long_length_.at(slot);
  return {v >> kLengthBits, length};
}

void Shard::Impl::ClearLocation(uint32_t slot) {
  if (slot < loc_.size()) loc_[slot] = kNoRecord;  // an Apply that failed may not have set it
  long_length_.erase(slot);
}

Status Shard::Impl::ReadSignature(uint32_t slot, std::string* buffer, pb::PageSignature* sig) const {
  if (!HasLocation(slot)) {
    return Corruption("shard: " + options_.path + ": slot " + std::to_string(slot) + " has no signature record");
  }
  RETURN_IF_ERROR(log_->Read(Location(slot), buffer));
  return ParseSlotRecord(slot, *buffer, sig);
}

Status Shard::Impl::ParseSlotRecord(uint32_t slot, std::string_view payload, pb::PageSignature* sig) const {
  if (!ParsePageRecord(payload, sig)) {
    return Corruption("shard: " + options_.path + ": bad signature record for slot " + std::to_string(slot));
  }
  return Status::Ok();
}

bool Shard::Impl::LogNeedsCompaction() const {
  const uint64_t dead = log_->end() - log_live_bytes_;
  return dead >= options_.log_compact_min_bytes && dead >= log_live_bytes_;
}

Status Shard::Impl::CompactLog() {
  const uint32_t generation = log_generation_ + 1;
  const std::string path = (std::filesystem::path(options_.path) / LogFileName(generation)).string();
  ASSIGN_OR_RETURN(std::unique_ptr<SignatureLog> next, SignatureLog::Open(env_, path, 0));
  auto abandon = [&](Status s) {
    next.reset();
    (void)env_->Remove(path);  // else the next Open removes it
    return s;
  };
  // Copy the live records in slot order, a few MB at a time.
  std::vector<uint32_t> slots;
  std::vector<SignatureLog::Ref> moved, refs;
  std::vector<std::string> chunk;
  std::vector<std::string_view> views;
  size_t chunk_bytes = 0;
  auto flush = [&]() -> Status {
    views.assign(chunk.begin(), chunk.end());
    RETURN_IF_ERROR(next->Append(views, &refs));
    moved.insert(moved.end(), refs.begin(), refs.end());
    chunk.clear();
    chunk_bytes = 0;
    return Status::Ok();
  };
  for (uint32_t slot = 0; slot < loc_.size(); ++slot) {
    if (!HasLocation(slot)) continue;
    chunk.emplace_back();
    if (Status s = log_->Read(Location(slot), &chunk.back()); !s.ok()) return abandon(s);
    slots.push_back(slot);
    chunk_bytes += chunk.back().size();
    if (chunk_bytes >= (8u << 20)) {
      if (Status s = flush(); !s.ok()) return abandon(s);
    }
  }
  if (Status s = flush(); !s.ok()) return abandon(s);
  // The new generation is durable before the store points at it, whatever options_.sync says:
  // after the commit the old one is deleted.
  if (Status s = next->Sync(); !s.ok()) return abandon(s);
  // The new generation holds only page records: the replaced and removed pages are gone.
  if (Status s = WriteCommit({generation, next->end(), commits_->last().sequence}, /*sync=*/true,
                             "commit the compacted log");
      !s.ok()) {
    return abandon(s);
  }
  const std::string old = log_->path();
  log_ = std::move(next);
  log_generation_ = generation;
  for (size_t i = 0; i < slots.size(); ++i) SetLocation(slots[i], moved[i]);
  log_live_bytes_ = log_->end();
  ++log_compactions_;
  (void)env_->Remove(old);  // a failure leaves a file the next Open removes
  return Status::Ok();
}

Status Shard::Impl::WriteCommit(const CommitFile::Record& record, bool sync, const char* what) {
  const CommitFile::Record committed = commits_->last();
  if (Status s = commits_->Write(record, sync); !s.ok()) {
    // The slot written may hold the new commit: put the last one back.
    if (Status back = commits_->Write(committed, sync); !back.ok()) {
      spdlog::warn("shard: {}", back.ToString());
    }
    return Status(s.code(), "shard: " + options_.path + ": " + what + ": " + s.message());
  }
  return Status::Ok();
}

void Shard::Impl::MaybeCompactLog() {
  // Not with a batch staged (its records past the end would not be copied) or published (the
  // new generation's commit would commit it).
  if (staged_ || published_) return;
  std::unique_lock loc(loc_mu_);
  if (LogNeedsCompaction()) {
    // The batch is stored either way; a failed compaction leaves the old log and is retried.
    if (Status r = CompactLog(); !r.ok()) spdlog::warn("shard: compacting the signature log failed: {}", r.ToString());
  }
}

void Shard::Impl::TruncateLog(uint64_t end) {
  if (Status t = log_->Truncate(end); !t.ok()) spdlog::warn("shard: {}", t.ToString());  // Open cuts it
}

Status Shard::Impl::LookupSlot(std::string_view url, UrlSlots::Found* found, std::string* record) const {
  return url_slots_.Lookup(
      url,
      [this](uint32_t slot, std::string* payload, std::string_view* named, bool* resident) -> Status {
        *resident = HasLocation(slot);
        if (!*resident) return Status::Ok();
        RETURN_IF_ERROR(log_->Read(Location(slot), payload));
        if (!PageRecordUrl(*payload, named)) {
          return Corruption("shard: " + log_->path() + ": the record of slot " + std::to_string(slot) +
                            " is not a page");
        }
        return Status::Ok();
      },
      found, record);
}

}  // namespace neardup::tier2
