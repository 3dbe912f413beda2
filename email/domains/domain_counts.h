// DomainCounts: how many users each team has per (email domain, role), as an eventually
// consistent materialized view kept from an at-least-once event stream, with a healer; and the
// classification of an invitee's address as internal or external to a team (Slack's email
// classification).
//
// Two inputs, interleaved in arrival order (DomainRecord):
//   - user rows: the users table's writes (the truth): a user's team, email, role, whether active,
//     and a version; a row replaces the stored one only when its version is newer, so rows may
//     come late or twice.
//   - events, delivered at least once and in no guaranteed order: joined (+1), left (-1),
//     email_changed (-1 old domain, +1 new), role_changed (-1 old role, +1 new). Each applies its
//     +1/-1 to RowStore counters and never recounts; a duplicate counts twice, a dropped event
//     never, a late one out of order: counts drift.
//   - team settings: a team's tenant domains (for classification).
//
// The healer fixes drift without pausing ingestion: for a key it takes a snapshot of the store
// (RowStore::NewSnapshot), counts the key's users in the user rows' index as of that snapshot,
// reads the counter as of the same snapshot, and applies the difference as one +N/-N increment.
// Events applied while it works land on top of the increment, never under a value it overwrites,
// so no mutation is lost. It runs, on a thread of its own, for every key an event takes below zero
// and for a sampled share of the keys events touch (healer_sample_rate); HealAll() heals every key.
//
// Store layout (RowStore):
//   dc_user    row team\0user              column ""     value: version (BE64), active, email\0role
//   dc_member  row team\0domain\0role      column user   a user counted under the key (index)
//   dc_team    row team                    column domain a tenant domain
//   counter    "dc\0" team \0 domain \0 role           the view
//
// Thread safety: Apply is called by one thread at a time; everything else from any thread, at
// once with Apply (the healer thread does).
#pragma once

#include <atomic>
#include <compare>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "storage/row_store.h"

namespace leveldb {
class Env;
}

namespace neardup::email {

struct DomainKey {
  std::string team, domain, role;
  auto operator<=>(const DomainKey&) const = default;
};

enum class DomainEventType { kJoined, kLeft, kEmailChanged, kRoleChanged };

struct UserRow {
  std::string team, user, email, role;
  bool active = true;
  uint64_t version = 0;
};

// joined / left: email and role. email_changed: email (the old one), new_email, role.
// role_changed: email, role (the old one), new_role.
struct DomainEvent {
  std::string id;
  DomainEventType type = DomainEventType::kJoined;
  std::string team, user, email, new_email, role, new_role;
};

struct TeamSettings {
  std::string team;
  std::vector<std::string> domains;  // the tenant's own domains
};

struct DomainRecord {
  enum class Kind { kUser, kEvent, kTeam } kind = Kind::kUser;
  UserRow user;
  DomainEvent event;
  TeamSettings team;
  uint64_t line = 0;  // 1-based line in its file, when read from one
};

// One JSON object per line:
//   {"kind":"user","team":T,"user":U,"email":E,"role":R,"active":true,"version":N}
//   {"kind":"event","id":I,"type":"joined|left|email_changed|role_changed","team":T,"user":U,
//    "email":E,"role":R[,"new_email":E2][,"new_role":R2]}
//   {"kind":"team","team":T,"domains":["a.com",...]}
// InvalidArgument naming the field and the problem (never its content).
Status ParseDomainRecord(std::string_view line, DomainRecord* out);
std::string DomainRecordJson(const DomainRecord& r);

// The lower-cased part after the last '@'; empty when there is none.
std::string DomainOf(std::string_view email);

// A user row as the store keeps it: what the index and the counts need.
struct StoredUser {
  uint64_t version = 0;
  bool active = false;
  std::string domain, role;
};

struct DomainCountsOptions {
  std::string path;
  leveldb::Env* env = nullptr;
  bool sync = false;  // fsync every Apply (the view can be healed from the user rows: off)
  double healer_sample_rate = ConfigDefaults().email().domain_healer_sample_rate();
  bool healer_thread = true;  // false: triggered keys wait for DrainHealer() (tests)
  // User rows kept in memory as Apply writes or reads them (Apply is their only writer), so a
  // user's next record needs no store read. At most this many (an arbitrary one dropped past it).
  uint64_t user_cache_entries = 1ull << 20;
};

struct HealerReport {
  uint64_t negative_triggers = 0;  // keys queued because an event took them below zero
  uint64_t sampled_triggers = 0;   // keys queued by the sample
  uint64_t keys_checked = 0;       // recounts done
  uint64_t keys_healed = 0;        // of those, with a difference applied
  uint64_t corrections = 0;        // sum of |difference|
  int64_t net_correction = 0;      // sum of the differences applied (signed)
  uint64_t cells_scanned = 0;      // index cells the recounts read
  double seconds = 0;              // time spent recounting and writing
};

struct Classification {
  bool internal = false;
  std::string reason;  // which rule decided
  int64_t members = 0, guests = 0, team_members = 0;  // the counts step's inputs (0 when not reached)
};

// The classification's first step, from the request alone (no store access): the invitee's
// domain is one of the tenant's, or the inviter's (not a public provider). nullopt: undecided.
std::optional<Classification> ClassifyByContext(const TeamSettings& team, std::string_view inviter,
                                                std::string_view invitee, const pb::EmailConfig& config);

class DomainCounts {
 public:
  static StatusOr<std::unique_ptr<DomainCounts>> Open(const DomainCountsOptions& options);
  ~DomainCounts();  // stops the healer thread (after the key it is on)

  // Applies the records in order as one atomic write: user rows replace older versions (and move
  // their index cells), events add their +1/-1, team settings replace the team's domains. Then
  // queues for the healer every key now below zero and the sampled ones. InvalidArgument for a
  // record with an empty team, user or domain; the store's errors otherwise (nothing applied).
  Status Apply(std::span<const DomainRecord> records);

  // The view's count (in memory, no I/O).
  int64_t Count(const DomainKey& key) const;
  // Every key of a team with its count, in order.
  std::vector<std::pair<DomainKey, int64_t>> TeamCounts(std::string_view team) const;
  // Every key with a counter or with users, in order: counts as the view has them.
  StatusOr<std::vector<std::pair<DomainKey, int64_t>>> AllCounts() const;
  // Users of the key in the user rows (the truth the healer counts).
  StatusOr<int64_t> TrueCount(const DomainKey& key) const;
  StatusOr<TeamSettings> Team(std::string_view team) const;

  // Recounts the key now and applies the difference; returns it. Heals run one at a time.
  StatusOr<int64_t> Heal(const DomainKey& key);
  // Heal for many keys from one snapshot, their differences applied in one write; *diffs (when
  // given) gets each key's, in order.
  Status HealKeys(std::span<const DomainKey> keys, std::vector<int64_t>* diffs = nullptr);
  // Heals every key (with a counter or with users).
  Status HealAll();
  // Makes every Apply and heal before it durable (one fsync; the counters are written by it).
  Status Sync();
  // Heals every key queued so far (on the caller's thread when there is no healer thread) and
  // waits for the healer to be idle; the first error a heal met.
  Status DrainHealer();
  HealerReport healer_report() const;

  // The whole classification: ClassifyByContext, then the team's counts for the invitee's domain.
  StatusOr<Classification> Classify(const TeamSettings& team, std::string_view inviter, std::string_view invitee,
                                    const pb::EmailConfig& config) const;

  RowStore& store() { return *store_; }

 private:
  explicit DomainCounts(const DomainCountsOptions& options) : options_(options) {}
  // The healer takes up to kHealBatch keys at a time, waiting up to kHealGatherMillis for them.
  static constexpr size_t kHealBatch = 256;
  static constexpr int kHealGatherMillis = 20;

  // The users an Apply changed, as it left them (a later record of the same user reads these).
  using ChangedUsers = std::map<std::string, std::optional<StoredUser>>;
  // Apply's steps: a user row's cells and index cells into the batch (unless the stored row is as
  // new); a team's settings replacing its domains; after the write, the changed users kept in
  // user_cache_ and the touched counters queued for the healer.
  Status ApplyUser(const UserRow& u, RowBatch* batch, ChangedUsers* users);
  Status ApplyTeam(const TeamSettings& t, RowBatch* batch);
  void CacheUsers(ChangedUsers* users);
  Status QueueTouched(const std::vector<std::pair<std::string, std::string_view>>& touched);
  void Enqueue(const DomainKey& key, bool negative);
  void HealerLoop();
  std::vector<DomainKey> TakeQueuedLocked(size_t at_most);  // under mu_

  const DomainCountsOptions options_;
  std::unique_ptr<RowStore> store_;
  RowStore::Family user_ = 0, member_ = 0, team_ = 0;

  // One heal at a time: two heals of a key from snapshots taken before either wrote would both
  // apply the same difference.
  std::mutex heal_mu_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::set<DomainKey> queued_;       // under mu_
  std::deque<DomainKey> queue_;      // under mu_
  bool healing_ = false, stop_ = false, draining_ = false;  // under mu_
  Status heal_error_;                // under mu_
  HealerReport report_;              // under mu_
  std::thread healer_;
  // Apply's own (one Apply at a time): team\0user -> the user row as stored.
  std::unordered_map<std::string, StoredUser> user_cache_;
};

}  // namespace neardup::email
