// ThreadWeaver: one unified thread for every copy of a conversation across mailboxes, as Streak's
// "threadweaver" (every email, everywhere, all at once): a write path of O(1) store operations
// per email, and a read path that follows recorded merges.
//
// An email arrives as (gid: its mailbox, thread: the mailbox's thread id, Message-ID, team). The
// thread and the Message-ID each map to one unified thread, written once and never changed, with
// RowStore's conditional write (put if absent, return what is there):
//   - a thread seen for the first time takes the unified thread of its Message-ID if that has one,
//     else its own ("gid:thread"), and is added to that unified thread's threads in the same
//     atomic write;
//   - a known thread gives its unified thread to the Message-ID if that has none;
//   - when the thread's and the Message-ID's unified threads differ, the merge of the two is
//     recorded (an unordered pair, both directions in one atomic write); the maps stay as written.
// A read starts at a thread's unified thread, follows merges transitively, and returns the threads
// of every unified thread found, filtered to a team's mailboxes. So the unified threads are the
// connected components of the bipartite thread/Message-ID graph, whatever the arrival order and
// however many writers run at once.
//
// Message-IDs are not always unique. A unified thread with more than spam_cap threads of its own
// (a system reusing one Message-ID for every email) is ignored on reads, its merges included; the
// starting thread is always part of its own answer. An email without a Message-ID maps its thread
// and never unifies anything. Message-IDs are stored as their 128-bit XXH3 hash.
//
// Store layout (RowStore, families):
//   tw_thread   row "gid:thread"       column ""               value: unified thread id
//   tw_message  row XXH3-128(msg id)   column ""               value: unified thread id
//   tw_unified  row unified thread id  column 'M' + other id   a merge (both directions)
//                                      column 'T' + "gid:thread"  one of its threads
//   tw_team     row team               column gid              a team's mailbox
// A unified thread's id is the "gid:thread" of the thread that started it.
//
// Reads from memory: the thread map's cells never change once written, so a thread's unified
// thread is kept in memory as Add maps it or a Lookup reads it; a unified thread's row (its threads
// and merges) is kept as a Lookup reads it, and the Adds that write to it add their cell to it
// after the write (a copy: readers keep the old one). A row read concurrently with such a write is kept only when no write to its shard of the
// cache ended since the read began (a version per shard), so the cache never holds a row older
// than the store's. Both are bounded (read_cache_entries each); 0 turns them off.
//
// Durability: Add's writes are not fsync'ed; Sync() makes every Add that returned before it
// durable (one fsync: acknowledge emails in groups). After a crash, an email not yet acknowledged
// may have been applied in part (its Message-ID mapped, its thread not); given again, it completes,
// and nothing half-written is ever visible as a wrong answer: a thread's mapping and its place in
// its unified thread are one write, a merge's two directions are one write.
//
//   ThreadWeaverOptions o;  o.path = dir;
//   ASSIGN_OR_RETURN(auto weaver, ThreadWeaver::Open(o));
//   RETURN_IF_ERROR(weaver->Add({"alice", "t1", "<m1@x>", "acme"}));
//   RETURN_IF_ERROR(weaver->Sync());
//   ASSIGN_OR_RETURN(UnifiedThread u, weaver->Lookup("bob", "t9", &team_gids));
//
// Thread safety: every method may be called from any thread at once.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "storage/row_store.h"

namespace leveldb {
class Env;
}

namespace neardup::email {

struct ThreadWeaverOptions {
  std::string path;
  uint32_t spam_cap = ConfigDefaults().email().thread_spam_cap();
  leveldb::Env* env = nullptr;          // tests: a memory or faulty Env
  uint64_t cache_bytes = 64ull << 20;   // LevelDB block cache
  // Thread mappings and unified-thread rows kept in memory for reads (each at most this many; an
  // arbitrary one of the shard is dropped past it). 0: every read goes to LevelDB.
  uint64_t read_cache_entries = 1ull << 20;
};

struct ThreadEmail {
  std::string gid;         // mailbox (user) id: non-empty, no ':'
  std::string thread;      // the mailbox's thread id: non-empty
  std::string message_id;  // empty: the email had none
  std::string team;        // optional: records gid as a mailbox of the team
};

struct UnifiedThread {
  bool known = false;                // the starting thread has been seen
  std::vector<std::string> threads;  // "gid:thread", sorted, filtered to the team's gids if asked
  std::vector<std::string> unified;  // the unified threads reached, sorted (spam ones included)
  uint32_t spam = 0;                 // of those, ignored for passing spam_cap
};


struct ThreadWeaverStats {
  uint64_t emails = 0;
  uint64_t new_threads = 0;       // threads this weaver mapped first
  uint64_t merges = 0;            // merges recorded (an email whose thread and Message-ID disagreed)
  uint64_t no_message_id = 0;
  uint64_t cached_rows = 0, cached_threads = 0;  // in the read cache now
};

// "gid:thread": a thread's key and, for the thread that starts one, its unified thread's id.
std::string ThreadKey(std::string_view gid, std::string_view thread);
// The gid of a "gid:thread" key.
std::string_view GidOf(std::string_view thread_key);

class ThreadWeaver {
 public:
  // Opens or creates the store. InvalidArgument for a bad option; RowStore's errors otherwise.
  static StatusOr<std::unique_ptr<ThreadWeaver>> Open(const ThreadWeaverOptions& options);
  ~ThreadWeaver();

  // The write path: at most one read and three conditional or plain writes. InvalidArgument for an
  // empty gid or thread or a gid with ':'; the store's error otherwise (the email is then not
  // acknowledged and may be given again).
  Status Add(const ThreadEmail& email);
  // Makes every Add that returned before it durable.
  Status Sync();

  // The read path. team_gids: when given, only threads of these mailboxes are returned (the walk
  // still crosses every unified thread). NotFound never: an unknown thread gives known = false.
  StatusOr<UnifiedThread> Lookup(std::string_view gid, std::string_view thread,
                                 const std::unordered_set<std::string>* team_gids = nullptr) const;
  // The mailboxes recorded for a team (sorted).
  StatusOr<std::vector<std::string>> TeamGids(std::string_view team) const;

  ThreadWeaverStats stats() const;
  RowStore& store() { return *store_; }

 private:
  // A unified thread's row as a read needs it.
  struct Row {
    std::vector<std::string> threads, merges;
  };
  // The read cache, sharded by a hash of the key. Rows and thread mappings share the shards.
  struct Shard {
    std::mutex mu;
    uint64_t version = 0;  // bumped by every write to a row of the shard (after the write)
    std::unordered_map<std::string, std::shared_ptr<const Row>> rows;  // under mu
    std::unordered_map<std::string, std::string> threads;              // under mu
  };
  static constexpr size_t kShards = 64;

  explicit ThreadWeaver(const ThreadWeaverOptions& options) : options_(options) {}
  Status Merge(const std::string& a, const std::string& b);
  Shard& ShardOf(std::string_view key) const;
  // A thread's unified thread; NotFound for an unknown thread.
  Status UnifiedOf(const std::string& thread_key, std::string* unified) const;
  void RememberThread(const std::string& thread_key, const std::string& unified) const;
  // The unified thread's row, from the cache or the store; null for a spam one (spam_cap passed).
  StatusOr<std::shared_ptr<const Row>> ReadRow(const std::string& unified) const;
  // After a write of one cell (tag + cell: a merge or a thread) to the unified thread's row: adds
  // it to the cached row (a copy), or drops the row when it cannot be sure to add it once. Keeps
  // the cache coherent: a cached row was read with no write of its shard ending in between, so
  // it holds every cell written before, and this adds every cell written after.
  void AfterWrite(const std::string& unified, char tag, const std::string& cell);
  // After a write to the unified thread's row: drops it from the cache.
  void Invalidate(const std::string& unified);

  const ThreadWeaverOptions options_;
  std::unique_ptr<RowStore> store_;
  RowStore::Family thread_ = 0, message_ = 0, unified_ = 0, team_ = 0;
  std::atomic<uint64_t> emails_{0}, new_threads_{0}, merges_{0}, no_message_id_{0};
  // Unified threads found past the cap (their threads only grow: once spam, always spam), so that
  // a read skips them without scanning their cap + 1 cells again.
  mutable std::mutex spam_mu_;
  mutable std::unordered_set<std::string> spam_;  // under spam_mu_
  std::mutex teams_mu_;
  std::set<std::string, std::less<>> teams_seen_;  // "team\0gid" written already (under teams_mu_)
  mutable std::array<Shard, kShards> cache_;
};

}  // namespace neardup::email
