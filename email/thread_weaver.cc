#include "email/thread_weaver.h"

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
  RETURN_IF_ERROR(store_->Write(batch));
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
  Status s = store_->Get(thread_, tkey, "", &thread_ut);
  if (s.code() == StatusCode::kNotFound) {
    // A new thread: its Message-ID's unified thread, or its own.
    std::string message_ut = tkey;
    if (!mkey.empty()) RETURN_IF_ERROR(store_->PutIfAbsent(message_, mkey, "", tkey, &message_ut, none).status());
    RowBatch member;
    member.set_durable(false);
    member.Put(unified_, message_ut, std::string(1, kThreadTag) + tkey, "");
    ASSIGN_OR_RETURN(const bool mapped, store_->PutIfAbsent(thread_, tkey, "", message_ut, &thread_ut, member));
    if (mapped) new_threads_.fetch_add(1, std::memory_order_relaxed);
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

StatusOr<UnifiedThread> ThreadWeaver::Lookup(std::string_view gid, std::string_view thread,
                                             const std::unordered_set<std::string>* team_gids) const {
  RETURN_IF_ERROR(CheckIds(gid, thread));
  UnifiedThread out;
  const std::string tkey = ThreadKey(gid, thread);
  std::string start;
  Status s = store_->Get(thread_, tkey, "", &start);
  if (s.code() == StatusCode::kNotFound) return out;
  RETURN_IF_ERROR(s);
  out.known = true;
  auto wanted = [&](std::string_view key) {
    return team_gids == nullptr || team_gids->count(std::string(GidOf(key))) > 0;
  };
  std::unordered_set<std::string> visited{start};
  std::deque<std::string> queue{start};
  std::vector<std::string> merges, threads;
  bool self_found = false;
  while (!queue.empty()) {
    const std::string ut = std::move(queue.front());
    queue.pop_front();
    out.unified.push_back(ut);
    merges.clear();
    threads.clear();
    {
      std::lock_guard lock(spam_mu_);
      if (spam_.count(ut)) {
        ++out.spam;
        continue;
      }
    }
    bool spam = false;
    RETURN_IF_ERROR(store_->ScanRow(unified_, ut, [&](std::string_view column, std::string_view) {
      if (column.empty()) return true;
      const std::string_view rest = column.substr(1);
      if (column[0] == kMergeTag) {
        merges.emplace_back(rest);
      } else if (column[0] == kThreadTag) {
        if (threads.size() == options_.spam_cap) {
          spam = true;
          return false;
        }
        threads.emplace_back(rest);
      }
      return true;
    }));
    if (spam) {
      {
        std::lock_guard lock(spam_mu_);
        spam_.insert(ut);
      }
      ++out.spam;
      continue;  // neither its threads nor its merges
    }
    for (std::string& t : threads) {
      if (t == tkey) self_found = true;
      if (wanted(t)) out.threads.push_back(std::move(t));
    }
    for (std::string& m : merges) {
      if (visited.insert(m).second) queue.push_back(std::move(m));
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
  return s;
}

}  // namespace neardup::email
