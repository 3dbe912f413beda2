#include "email/threads/thread_weaver.h"

#include <xxhash.h>

#include <algorithm>
#include <deque>
#include <unordered_set>

namespace neardup::email {
namespace {

constexpr char kMergeTag = 'M';
constexpr char kThreadTag = 'T';

std::string MessageKey(std::string_view message_id) {
  const XXH128_hash_t h = XXH3_128bits(message_id.data(), message_id.size());
  std::string key(16, '\0');
  for (int i = 0; i < 8; ++i) {
    key[i] = static_cast<char>(h.high64 >> (56 - 8 * i));
    key[8 + i] = static_cast<char>(h.low64 >> (56 - 8 * i));
  }
  return key;
}

std::string_view Trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

Status CheckIds(std::string_view gid, std::string_view thread) {
  if (gid.empty()) return InvalidArgument("gid is empty");
  if (gid.find(':') != std::string_view::npos) return InvalidArgument("gid contains ':'");
  if (thread.empty()) return InvalidArgument("thread is empty");
  return Status::Ok();
}

}  // namespace

std::string ThreadKey(std::string_view gid, std::string_view thread) {
  std::string k;
  k.reserve(gid.size() + 1 + thread.size());
  k.append(gid).push_back(':');
  k.append(thread);
  return k;
}

std::string_view GidOf(std::string_view thread_key) { return thread_key.substr(0, thread_key.find(':')); }

StatusOr<std::unique_ptr<ThreadWeaver>> ThreadWeaver::Open(const ThreadWeaverOptions& options) {
  if (options.path.empty()) return InvalidArgument("thread weaver: empty path");
  if (options.spam_cap == 0) return InvalidArgument("thread weaver: spam_cap must be at least 1");
  std::unique_ptr<ThreadWeaver> w(new ThreadWeaver(options));
  RowStoreOptions ro;
  ro.path = options.path;
  ro.families = {"tw_thread", "tw_message", "tw_unified", "tw_team"};
  ro.sync = true;  // only Sync() writes durably: every write below is set_durable(false)
  ro.cache_bytes = options.cache_bytes;
  ro.env = options.env;
  ASSIGN_OR_RETURN(w->store_, RowStore::Open(ro));
  w->thread_ = w->store_->family("tw_thread");
  w->message_ = w->store_->family("tw_message");
  w->unified_ = w->store_->family("tw_unified");
  w->team_ = w->store_->family("tw_team");
  return w;
}

ThreadWeaver::~ThreadWeaver() = default;

Status ThreadWeaver::Merge(const std::string& a, const std::string& b) {
  RowBatch batch;
  batch.set_durable(false);
  std::string col(1, kMergeTag);
  batch.Put(unified_, a, col + b, "");
  batch.Put(unified_, b, col + a, "");
  const Status s = store_->Write(batch);
  if (s.ok()) {
    AfterWrite(a, kMergeTag, b);
    AfterWrite(b, kMergeTag, a);
  } else {
    Invalidate(a);
    Invalidate(b);
  }
  RETURN_IF_ERROR(s);
  merges_.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

Status ThreadWeaver::Add(const ThreadEmail& email) {
  RETURN_IF_ERROR(CheckIds(email.gid, email.thread));
  const std::string_view message_id = Trim(email.message_id);
  const std::string tkey = ThreadKey(email.gid, email.thread);
  const std::string mkey = message_id.empty() ? std::string() : MessageKey(message_id);
  if (!email.team.empty()) {
    std::string seen = email.team;
    seen.push_back('\0');
    seen += email.gid;
    bool fresh = false;
    {
      std::lock_guard lock(teams_mu_);
      fresh = teams_seen_.insert(seen).second;
    }
    if (fresh) {
      RowBatch b;
      b.set_durable(false);
      b.Put(team_, email.team, email.gid, "");
      if (Status s = store_->Write(b); !s.ok()) {
        std::lock_guard lock(teams_mu_);
        teams_seen_.erase(seen);  // written again when the email is given again
        return s;
      }
    }
  }
  emails_.fetch_add(1, std::memory_order_relaxed);
  if (message_id.empty()) no_message_id_.fetch_add(1, std::memory_order_relaxed);
  RowBatch none;
  none.set_durable(false);

  std::string thread_ut;
  Status s = UnifiedOf(tkey, &thread_ut);
  if (s.code() == StatusCode::kNotFound) {
    // A new thread: its Message-ID's unified thread, or its own.
    std::string message_ut = tkey;
    if (!mkey.empty()) RETURN_IF_ERROR(store_->PutIfAbsent(message_, mkey, "", tkey, &message_ut, none).status());
    RowBatch member;
    member.set_durable(false);
    member.Put(unified_, message_ut, std::string(1, kThreadTag) + tkey, "");
    StatusOr<bool> mapped = store_->PutIfAbsent(thread_, tkey, "", message_ut, &thread_ut, member);
    if (mapped.ok() && *mapped) AfterWrite(message_ut, kThreadTag, tkey);  // the row has a new thread
    if (mapped.ok() && *mapped && message_ut == tkey && options_.read_cache_entries > 0) {
      // A unified thread starts: its row, just written, is read into the cache while its cells
      // are in the CPU's cache (usually the one cell; a read, so whatever else it holds too).
      RETURN_IF_ERROR(ReadRow(tkey).status());
    }
    RETURN_IF_ERROR(mapped.status());
    RememberThread(tkey, thread_ut);
    if (*mapped) new_threads_.fetch_add(1, std::memory_order_relaxed);
    // Another writer mapped the thread first (to its own unified thread): the two are one.
    if (thread_ut != message_ut) RETURN_IF_ERROR(Merge(thread_ut, message_ut));
    return Status::Ok();
  }
  RETURN_IF_ERROR(s);
  if (mkey.empty()) return Status::Ok();
  std::string message_ut;
  RETURN_IF_ERROR(store_->PutIfAbsent(message_, mkey, "", thread_ut, &message_ut, none).status());
  if (message_ut != thread_ut) RETURN_IF_ERROR(Merge(thread_ut, message_ut));
  return Status::Ok();
}

Status ThreadWeaver::Sync() { return store_->Sync(); }

ThreadWeaver::Shard& ThreadWeaver::ShardOf(std::string_view key) const {
  return cache_[XXH3_64bits(key.data(), key.size()) % kShards];
}

Status ThreadWeaver::UnifiedOf(const std::string& thread_key, std::string* unified) const {
  if (options_.read_cache_entries > 0) {
    Shard& sh = ShardOf(thread_key);
    std::lock_guard lock(sh.mu);
    if (auto it = sh.threads.find(thread_key); it != sh.threads.end()) {
      *unified = it->second;
      return Status::Ok();
    }
  }
  RETURN_IF_ERROR(store_->Get(thread_, thread_key, "", unified));
  RememberThread(thread_key, *unified);  // the cell never changes: no version to check
  return Status::Ok();
}

void ThreadWeaver::RememberThread(const std::string& thread_key, const std::string& unified) const {
  const uint64_t cap = options_.read_cache_entries / kShards + 1;
  if (options_.read_cache_entries == 0) return;
  Shard& sh = ShardOf(thread_key);
  std::lock_guard lock(sh.mu);
  if (sh.threads.size() >= cap && !sh.threads.count(thread_key)) sh.threads.erase(sh.threads.begin());
  sh.threads.emplace(thread_key, unified);
}

void ThreadWeaver::AfterWrite(const std::string& unified, char tag, const std::string& cell) {
  if (options_.read_cache_entries == 0) return;
  constexpr size_t kSmallRow = 64;  // past it, a thread is not looked for: the row is dropped
  Shard& sh = ShardOf(unified);
  std::lock_guard lock(sh.mu);
  ++sh.version;
  const auto it = sh.rows.find(unified);
  if (it == sh.rows.end()) return;
  const Row& old = *it->second;
  const std::vector<std::string>& list = tag == kMergeTag ? old.merges : old.threads;
  const bool small = list.size() < kSmallRow;
  if (small && std::find(list.begin(), list.end(), cell) != list.end()) return;  // read with the write
  if (tag == kThreadTag && (!small || old.threads.size() + 1 > options_.spam_cap)) {
    sh.rows.erase(it);  // a duplicate could not be ruled out, or the row may have become spam
    return;
  }
  // A copy: readers hold the old one without the lock. A merge read twice is harmless (the walk
  // visits each unified thread once).
  auto row = std::make_shared<Row>(old);
  (tag == kMergeTag ? row->merges : row->threads).push_back(cell);
  it->second = std::move(row);
}

void ThreadWeaver::Invalidate(const std::string& unified) {
  if (options_.read_cache_entries == 0) return;
  Shard& sh = ShardOf(unified);
  std::lock_guard lock(sh.mu);
  sh.rows.erase(unified);
  ++sh.version;
}

StatusOr<std::shared_ptr<const ThreadWeaver::Row>> ThreadWeaver::ReadRow(const std::string& unified) const {
  {
    std::lock_guard lock(spam_mu_);
    if (spam_.count(unified)) return std::shared_ptr<const Row>();
  }
  Shard& sh = ShardOf(unified);
  uint64_t version = 0;
  if (options_.read_cache_entries > 0) {
    std::lock_guard lock(sh.mu);
    if (auto it = sh.rows.find(unified); it != sh.rows.end()) return it->second;
    version = sh.version;
  }
  auto row = std::make_shared<Row>();
  bool spam = false;
  RETURN_IF_ERROR(store_->ScanRow(unified_, unified, [&](std::string_view column, std::string_view) {
    if (column.empty()) return true;
    const std::string_view rest = column.substr(1);
    if (column[0] == kMergeTag) {
      row->merges.emplace_back(rest);
    } else if (column[0] == kThreadTag) {
      if (row->threads.size() == options_.spam_cap) {
        spam = true;
        return false;
      }
      row->threads.emplace_back(rest);
    }
    return true;
  }));
  if (spam) {
    std::lock_guard lock(spam_mu_);
    spam_.insert(unified);
    return std::shared_ptr<const Row>();
  }
  if (options_.read_cache_entries > 0) {
    const uint64_t cap = options_.read_cache_entries / kShards + 1;
    std::lock_guard lock(sh.mu);
    // A write to the shard since the read began may be missing from it: keep it only when none ended.
    if (sh.version == version) {
      if (sh.rows.size() >= cap && !sh.rows.count(unified)) sh.rows.erase(sh.rows.begin());
      sh.rows.insert_or_assign(unified, row);
    }
  }
  return std::shared_ptr<const Row>(std::move(row));
}

StatusOr<UnifiedThread> ThreadWeaver::Lookup(std::string_view gid, std::string_view thread,
                                             const std::unordered_set<std::string>* team_gids) const {
  RETURN_IF_ERROR(CheckIds(gid, thread));
  UnifiedThread out;
  const std::string tkey = ThreadKey(gid, thread);
  std::string start;
  Status s = UnifiedOf(tkey, &start);
  if (s.code() == StatusCode::kNotFound) return out;
  RETURN_IF_ERROR(s);
  out.known = true;
  std::string gid_buf;
  auto wanted = [&](std::string_view key) {
    if (team_gids == nullptr) return true;
    gid_buf.assign(GidOf(key));
    return team_gids->count(gid_buf) > 0;
  };
  std::unordered_set<std::string> visited{start};
  std::deque<std::string> queue{start};
  bool self_found = false;
  while (!queue.empty()) {
    const std::string ut = std::move(queue.front());
    queue.pop_front();
    ASSIGN_OR_RETURN(const std::shared_ptr<const Row> row, ReadRow(ut));
    out.unified.push_back(ut);
    if (row == nullptr) {
      ++out.spam;
      continue;  // neither its threads nor its merges
    }
    for (const std::string& t : row->threads) {
      if (t == tkey) self_found = true;
      if (wanted(t)) out.threads.push_back(t);
    }
    for (const std::string& m : row->merges) {
      if (visited.insert(m).second) queue.push_back(m);
    }
  }
  if (!self_found && wanted(tkey)) out.threads.push_back(tkey);
  std::sort(out.threads.begin(), out.threads.end());
  std::sort(out.unified.begin(), out.unified.end());
  return out;
}

StatusOr<std::vector<std::string>> ThreadWeaver::TeamGids(std::string_view team) const {
  std::vector<std::string> out;
  RETURN_IF_ERROR(store_->ScanRow(team_, team, [&](std::string_view gid, std::string_view) {
    out.emplace_back(gid);
    return true;
  }));
  return out;
}

ThreadWeaverStats ThreadWeaver::stats() const {
  ThreadWeaverStats s;
  s.emails = emails_.load();
  s.new_threads = new_threads_.load();
  s.merges = merges_.load();
  s.no_message_id = no_message_id_.load();
  for (Shard& sh : cache_) {
    std::lock_guard lock(sh.mu);
    s.cached_rows += sh.rows.size();
    s.cached_threads += sh.threads.size();
  }
  return s;
}

}  // namespace neardup::email
