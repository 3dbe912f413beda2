#include "email/domains/domain_counts.h"

#include <simdjson.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <unordered_set>

#include "common/coding.h"
#include "common/json_write.h"
#include "document/json_fields.h"
#include "document/json_lines.h"

namespace neardup::email {
namespace {

constexpr std::string_view kCounterPrefix{"dc\0", 3};

std::string Join(std::string_view a, std::string_view b) {
  std::string s;
  s.reserve(a.size() + 1 + b.size());
  s.append(a).push_back('\0');
  s.append(b);
  return s;
}

// `prefix` team \0 domain \0 role, in one allocation.
std::string KeyString(std::string_view prefix, std::string_view team, std::string_view domain, std::string_view role) {
  std::string s;
  s.reserve(prefix.size() + team.size() + domain.size() + role.size() + 2);
  s.append(prefix).append(team).push_back('\0');
  s.append(domain).push_back('\0');
  s.append(role);
  return s;
}
std::string IndexRow(const DomainKey& k) { return KeyString({}, k.team, k.domain, k.role); }
std::string CounterName(const DomainKey& k) { return KeyString(kCounterPrefix, k.team, k.domain, k.role); }

// "a\0b\0c" into its three parts.
bool SplitKey(std::string_view s, DomainKey* k) {
  const size_t a = s.find('\0');
  if (a == std::string_view::npos) return false;
  const size_t b = s.find('\0', a + 1);
  if (b == std::string_view::npos || s.find('\0', b + 1) != std::string_view::npos) return false;
  k->team = s.substr(0, a);
  k->domain = s.substr(a + 1, b - a - 1);
  k->role = s.substr(b + 1);
  return true;
}

std::string EncodeUser(const UserRow& u) {
  std::string v;
  AppendBigEndian(&v, u.version, 8);
  v.push_back(u.active ? 1 : 0);
  v += DomainOf(u.email);
  v.push_back('\0');
  v += u.role;
  return v;
}

bool DecodeUser(std::string_view v, StoredUser* u) {
  if (v.size() < 10) return false;
  u->version = ReadBigEndian(v.data(), 8);
  u->active = v[8] != 0;
  const std::string_view rest = v.substr(9);
  const size_t z = rest.find('\0');
  if (z == std::string_view::npos) return false;
  u->domain = rest.substr(0, z);
  u->role = rest.substr(z + 1);
  return true;
}

Status CheckPart(std::string_view what, std::string_view v) {
  if (v.empty()) return InvalidArgument(std::string(what) + " is empty");
  if (v.find('\0') != std::string_view::npos) return InvalidArgument(std::string(what) + " contains NUL");
  return Status::Ok();
}

Status CheckEmail(const char* field, std::string_view email) {
  const std::string d = DomainOf(email);
  if (d.empty() || d.find('\0') != std::string::npos) return JsonFieldError(field, "is not an email address");
  return Status::Ok();
}

// Whether the event's key is in the healer's sample: a hash of the event id and the key's index
// row (the counter name without its prefix), so a duplicated event samples the same keys.
bool Sampled(std::string_view event_id, std::string_view counter_name, double rate) {
  if (rate <= 0) return false;
  if (rate >= 1) return true;
  thread_local std::string s;
  s.assign(event_id).push_back('\0');
  s.append(counter_name.substr(kCounterPrefix.size()));
  const uint64_t h = XXH3_64bits(s.data(), s.size());
  return static_cast<double>(h >> 11) * 0x1.0p-53 < rate;
}

const char* TypeName(DomainEventType t) {
  switch (t) {
    case DomainEventType::kJoined: return "joined";
    case DomainEventType::kLeft: return "left";
    case DomainEventType::kEmailChanged: return "email_changed";
    case DomainEventType::kRoleChanged: return "role_changed";
  }
  return "";
}

}  // namespace

std::string DomainOf(std::string_view email) {
  const size_t at = email.rfind('@');
  if (at == std::string_view::npos || at == 0) return "";
  std::string d(email.substr(at + 1));
  for (char& c : d) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return d;
}

// ParseDomainRecord without the NUL check.
static Status ParseDomainRecordFields(std::string_view line, DomainRecord* out) {
  simdjson::dom::object obj;
  RETURN_IF_ERROR(ParseJsonLine(line, {}, &obj));
  std::string kind;
  RETURN_IF_ERROR(RequiredJsonString(obj, "kind", &kind));
  if (kind == "user") {
    out->kind = DomainRecord::Kind::kUser;
    UserRow& u = out->user;
    RETURN_IF_ERROR(RequiredJsonString(obj, "team", &u.team));
    RETURN_IF_ERROR(RequiredJsonString(obj, "user", &u.user));
    RETURN_IF_ERROR(RequiredJsonString(obj, "email", &u.email));
    RETURN_IF_ERROR(CheckEmail("email", u.email));
    RETURN_IF_ERROR(RequiredJsonString(obj, "role", &u.role));
    bool active = true;
    if (auto e = obj["active"]; e.error() == simdjson::SUCCESS) {
      if (e.get_bool().get(active) != simdjson::SUCCESS) return JsonFieldError("active", "is not a boolean");
    }
    u.active = active;
    uint64_t version = 0;
    if (obj["version"].get_uint64().get(version) != simdjson::SUCCESS) {
      return JsonFieldError("version", "is missing or not a non-negative integer");
    }
    u.version = version;
    if (u.team.empty() || u.user.empty() || u.role.empty()) return InvalidArgument("team, user and role must not be empty");
    return Status::Ok();
  }
  if (kind == "event") {
    out->kind = DomainRecord::Kind::kEvent;
    DomainEvent& e = out->event;
    RETURN_IF_ERROR(RequiredJsonString(obj, "id", &e.id));
    std::string type;
    RETURN_IF_ERROR(RequiredJsonString(obj, "type", &type));
    RETURN_IF_ERROR(RequiredJsonString(obj, "team", &e.team));
    RETURN_IF_ERROR(RequiredJsonString(obj, "user", &e.user));
    RETURN_IF_ERROR(RequiredJsonString(obj, "email", &e.email));
    RETURN_IF_ERROR(CheckEmail("email", e.email));
    RETURN_IF_ERROR(RequiredJsonString(obj, "role", &e.role));
    e.new_email.clear();
    e.new_role.clear();
    if (type == "joined") {
      e.type = DomainEventType::kJoined;
    } else if (type == "left") {
      e.type = DomainEventType::kLeft;
    } else if (type == "email_changed") {
      e.type = DomainEventType::kEmailChanged;
      RETURN_IF_ERROR(RequiredJsonString(obj, "new_email", &e.new_email));
      RETURN_IF_ERROR(CheckEmail("new_email", e.new_email));
    } else if (type == "role_changed") {
      e.type = DomainEventType::kRoleChanged;
      RETURN_IF_ERROR(RequiredJsonString(obj, "new_role", &e.new_role));
      if (e.new_role.empty()) return JsonFieldError("new_role", "must not be empty");
    } else {
      return JsonFieldError("type", "is not joined, left, email_changed or role_changed");
    }
    if (e.team.empty() || e.user.empty() || e.role.empty()) return InvalidArgument("team, user and role must not be empty");
    return Status::Ok();
  }
  if (kind == "team") {
    out->kind = DomainRecord::Kind::kTeam;
    RETURN_IF_ERROR(RequiredJsonString(obj, "team", &out->team.team));
    if (out->team.team.empty()) return JsonFieldError("team", "must not be empty");
    out->team.domains.clear();
    simdjson::dom::array arr;
    if (obj["domains"].get_array().get(arr) != simdjson::SUCCESS) return JsonFieldError("domains", "is missing or not an array");
    for (simdjson::dom::element d : arr) {
      std::string_view s;
      if (d.get_string().get(s) != simdjson::SUCCESS || s.empty()) return JsonFieldError("domains", "holds a non-string or empty value");
      std::string domain(s);
      for (char& c : domain) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out->team.domains.push_back(std::move(domain));
    }
    return Status::Ok();
  }
  return JsonFieldError("kind", "is not user, event or team");
}

Status ParseDomainRecord(std::string_view line, DomainRecord* out) {
  RETURN_IF_ERROR(ParseDomainRecordFields(line, out));
  auto nul = [](std::initializer_list<std::string_view> fields) {
    for (std::string_view f : fields) {
      if (f.find('\0') != std::string_view::npos) return true;
    }
    return false;
  };
  const bool bad = nul({out->user.team, out->user.user, out->user.email, out->user.role, out->event.team,
                        out->event.user, out->event.email, out->event.new_email, out->event.role, out->event.new_role,
                        out->team.team}) ||
                   std::any_of(out->team.domains.begin(), out->team.domains.end(),
                               [](const std::string& d) { return d.find('\0') != std::string::npos; });
  if (bad) return InvalidArgument("a field contains NUL");
  return Status::Ok();
}

std::string DomainRecordJson(const DomainRecord& r) {
  std::string s;
  auto field = [&](const char* name, std::string_view v) {
    s += ",\"";
    s += name;
    s += "\":";
    AppendJsonString(&s, v);
  };
  switch (r.kind) {
    case DomainRecord::Kind::kUser:
      s = "{\"kind\":\"user\"";
      field("team", r.user.team);
      field("user", r.user.user);
      field("email", r.user.email);
      field("role", r.user.role);
      s += ",\"active\":";
      s += r.user.active ? "true" : "false";
      s += ",\"version\":" + std::to_string(r.user.version);
      break;
    case DomainRecord::Kind::kEvent:
      s = "{\"kind\":\"event\"";
      field("id", r.event.id);
      field("type", TypeName(r.event.type));
      field("team", r.event.team);
      field("user", r.event.user);
      field("email", r.event.email);
      field("role", r.event.role);
      if (r.event.type == DomainEventType::kEmailChanged) field("new_email", r.event.new_email);
      if (r.event.type == DomainEventType::kRoleChanged) field("new_role", r.event.new_role);
      break;
    case DomainRecord::Kind::kTeam:
      s = "{\"kind\":\"team\"";
      field("team", r.team.team);
      s += ",\"domains\":[";
      for (size_t i = 0; i < r.team.domains.size(); ++i) {
        if (i) s += ',';
        AppendJsonString(&s, r.team.domains[i]);
      }
      s += ']';
      break;
  }
  return s + "}";
}

StatusOr<std::unique_ptr<DomainCounts>> DomainCounts::Open(const DomainCountsOptions& options) {
  if (options.path.empty()) return InvalidArgument("domain counts: empty path");
  if (!(options.healer_sample_rate >= 0 && options.healer_sample_rate <= 1)) {
    return InvalidArgument("domain counts: healer_sample_rate must be in [0, 1]");
  }
  std::unique_ptr<DomainCounts> d(new DomainCounts(options));
  RowStoreOptions ro;
  ro.path = options.path;
  ro.families = {"dc_user", "dc_member", "dc_team"};
  ro.sync = options.sync;
  ro.env = options.env;
  // The counters change with nearly every event: kept in memory, written by Sync and by the
  // healer's snapshots (one put per changed counter then, not one per Apply).
  ro.lazy_counters = true;
  ASSIGN_OR_RETURN(d->store_, RowStore::Open(ro));
  d->user_ = d->store_->family("dc_user");
  d->member_ = d->store_->family("dc_member");
  d->team_ = d->store_->family("dc_team");
  if (options.healer_thread) d->healer_ = std::thread([p = d.get()] { p->HealerLoop(); });
  return d;
}

DomainCounts::~DomainCounts() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (healer_.joinable()) healer_.join();
}

namespace {

// An event's +1/-1 on its counters into the batch; each counter's name with the event's id into
// *touched. InvalidArgument for a bad part.
Status AddEventCounters(const DomainEvent& e, RowBatch* batch, std::vector<std::pair<std::string, std::string_view>>* touched) {
  RETURN_IF_ERROR(CheckPart("team", e.team));
  RETURN_IF_ERROR(CheckPart("role", e.role));
  const std::string domain = DomainOf(e.email);
  RETURN_IF_ERROR(CheckPart("email domain", domain));
  auto add = [&](std::string_view d, std::string_view role, int64_t delta) {
    std::string name = KeyString(kCounterPrefix, e.team, d, role);
    batch->AddCounter(name, delta);
    touched->emplace_back(std::move(name), e.id);
  };
  switch (e.type) {
    case DomainEventType::kJoined: add(domain, e.role, +1); break;
    case DomainEventType::kLeft: add(domain, e.role, -1); break;
    case DomainEventType::kEmailChanged: {
      const std::string to = DomainOf(e.new_email);
      RETURN_IF_ERROR(CheckPart("new email domain", to));
      add(domain, e.role, -1);
      add(to, e.role, +1);
      break;
    }
    case DomainEventType::kRoleChanged:
      RETURN_IF_ERROR(CheckPart("new role", e.new_role));
      add(domain, e.role, -1);
      add(domain, e.new_role, +1);
      break;
  }
  return Status::Ok();
}

}  // namespace

Status DomainCounts::Apply(std::span<const DomainRecord> records) {
  RowBatch batch;
  ChangedUsers users;
  // The counters events changed, with the id of the event (in `records`) that changed each.
  std::vector<std::pair<std::string, std::string_view>> touched;
  touched.reserve(records.size());
  for (const DomainRecord& r : records) {
    switch (r.kind) {
      case DomainRecord::Kind::kUser: RETURN_IF_ERROR(ApplyUser(r.user, &batch, &users)); break;
      case DomainRecord::Kind::kEvent: RETURN_IF_ERROR(AddEventCounters(r.event, &batch, &touched)); break;
      case DomainRecord::Kind::kTeam: RETURN_IF_ERROR(ApplyTeam(r.team, &batch)); break;
    }
  }
  RETURN_IF_ERROR(store_->Write(batch));
  // Written: the users as this call left them are the store's.
  CacheUsers(&users);
  return QueueTouched(touched);
}

Status DomainCounts::ApplyUser(const UserRow& u, RowBatch* batch, ChangedUsers* users) {
  RETURN_IF_ERROR(CheckPart("team", u.team));
  RETURN_IF_ERROR(CheckPart("user", u.user));
  RETURN_IF_ERROR(CheckPart("role", u.role));
  RETURN_IF_ERROR(CheckPart("email domain", DomainOf(u.email)));
  const std::string row = Join(u.team, u.user);
  auto it = users->find(row);
  if (it == users->end()) {
    std::optional<StoredUser> old;
    if (auto c = user_cache_.find(row); c != user_cache_.end()) {
      old = c->second;
    } else {
      std::string raw;
      Status s = store_->Get(user_, row, "", &raw);
      if (s.ok()) {
        old.emplace();
        if (!DecodeUser(raw, &*old)) return Corruption("domain counts: malformed user row");
      } else if (s.code() != StatusCode::kNotFound) {
        return s;
      }
    }
    it = users->emplace(row, std::move(old)).first;
  }
  std::optional<StoredUser>& cur = it->second;
  if (cur && cur->version >= u.version) return Status::Ok();  // older or the same: the row has it
  if (cur && cur->active) batch->Delete(member_, IndexRow({u.team, cur->domain, cur->role}), u.user);
  StoredUser next{u.version, u.active, DomainOf(u.email), u.role};
  if (next.active) batch->Put(member_, IndexRow({u.team, next.domain, next.role}), u.user, "");
  batch->Put(user_, row, "", EncodeUser(u));
  cur = std::move(next);
  return Status::Ok();
}

Status DomainCounts::ApplyTeam(const TeamSettings& t, RowBatch* batch) {
  RETURN_IF_ERROR(CheckPart("team", t.team));
  RETURN_IF_ERROR(store_->ScanRow(team_, t.team, [&](std::string_view d, std::string_view) {
    batch->Delete(team_, t.team, d);
    return true;
  }));
  for (const std::string& d : t.domains) {
    RETURN_IF_ERROR(CheckPart("domain", d));
    batch->Put(team_, t.team, d, "");
  }
  return Status::Ok();
}

void DomainCounts::CacheUsers(ChangedUsers* users) {
  for (auto& [row, user] : *users) {
    if (!user) continue;
    if (user_cache_.size() >= options_.user_cache_entries && !user_cache_.count(row)) {
      if (user_cache_.empty()) continue;  // user_cache_entries 0: no cache
      user_cache_.erase(user_cache_.begin());
    }
    user_cache_.insert_or_assign(row, std::move(*user));
  }
}

Status DomainCounts::QueueTouched(const std::vector<std::pair<std::string, std::string_view>>& touched) {
  for (const auto& [name, event_id] : touched) {
    const bool negative = store_->Counter(name) < 0;
    if (!negative && !Sampled(event_id, name, options_.healer_sample_rate)) continue;
    DomainKey key;
    if (!SplitKey(std::string_view(name).substr(kCounterPrefix.size()), &key)) {
      return Internal("domain counts: malformed counter name");  // checked parts never make one
    }
    Enqueue(key, negative);
  }
  return Status::Ok();
}

void DomainCounts::Enqueue(const DomainKey& key, bool negative) {
  {
    std::lock_guard lock(mu_);
    if (!queued_.insert(key).second) return;
    queue_.push_back(key);
    ++(negative ? report_.negative_triggers : report_.sampled_triggers);
  }
  cv_.notify_all();
}

std::vector<DomainKey> DomainCounts::TakeQueuedLocked(size_t at_most) {
  std::vector<DomainKey> keys;
  while (!queue_.empty() && keys.size() < at_most) {
    keys.push_back(std::move(queue_.front()));
    queue_.pop_front();
    queued_.erase(keys.back());
  }
  return keys;
}

void DomainCounts::HealerLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    // Let keys gather a moment (unless asked to drain): one snapshot heals them all.
    if (queue_.size() < kHealBatch && !draining_) {
      cv_.wait_for(lock, std::chrono::milliseconds(kHealGatherMillis),
                   [&] { return stop_ || draining_ || queue_.size() >= kHealBatch; });
      if (stop_) return;
    }
    std::vector<DomainKey> keys = TakeQueuedLocked(kHealBatch);
    healing_ = true;
    lock.unlock();
    Status s = HealKeys(keys);
    lock.lock();
    healing_ = false;
    if (!s.ok() && heal_error_.ok()) heal_error_ = s;
    cv_.notify_all();
  }
}

StatusOr<int64_t> DomainCounts::Heal(const DomainKey& key) {
  std::vector<int64_t> diffs;
  RETURN_IF_ERROR(HealKeys(std::span(&key, 1), &diffs));
  return diffs[0];
}

Status DomainCounts::HealKeys(std::span<const DomainKey> keys, std::vector<int64_t>* diffs) {
  if (keys.empty()) return Status::Ok();
  std::lock_guard heal_lock(heal_mu_);
  const auto start = std::chrono::steady_clock::now();
  // One snapshot for every key: each key's cells and counter are of one moment, and each key's
  // difference is applied once.
  std::vector<std::string> names;
  names.reserve(keys.size());
  for (const DomainKey& key : keys) names.push_back(CounterName(key));
  const std::unique_ptr<RowSnapshot> snap = store_->NewSnapshot(names);  // the counters from memory
  RowBatch b;
  HealerReport r;
  for (const DomainKey& key : keys) {
    int64_t users = 0;
    RETURN_IF_ERROR(snap->ScanRow(member_, IndexRow(key), [&](std::string_view, std::string_view) {
      ++users;
      return true;
    }));
    const std::string name = CounterName(key);
    ASSIGN_OR_RETURN(const int64_t counted, snap->Counter(name));
    const int64_t diff = users - counted;
    if (diff != 0) b.AddCounter(name, diff);  // relative: what landed since the snapshot stays counted
    if (diffs != nullptr) diffs->push_back(diff);
    ++r.keys_checked;
    r.keys_healed += diff != 0;
    r.corrections += static_cast<uint64_t>(diff < 0 ? -diff : diff);
    r.net_correction += diff;
    r.cells_scanned += static_cast<uint64_t>(users);
  }
  RETURN_IF_ERROR(store_->Write(b));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard lock(mu_);
  report_.keys_checked += r.keys_checked;
  report_.keys_healed += r.keys_healed;
  report_.corrections += r.corrections;
  report_.net_correction += r.net_correction;
  report_.cells_scanned += r.cells_scanned;
  report_.seconds += r.seconds;
  return Status::Ok();
}

Status DomainCounts::HealAll() {
  ASSIGN_OR_RETURN(auto all, AllCounts());
  std::vector<DomainKey> keys;
  keys.reserve(all.size());
  for (auto& [key, count] : all) keys.push_back(std::move(key));
  for (size_t i = 0; i < keys.size(); i += kHealBatch) {
    RETURN_IF_ERROR(HealKeys(std::span(keys).subspan(i, std::min(kHealBatch, keys.size() - i))));
  }
  return Status::Ok();
}

Status DomainCounts::Sync() { return store_->Sync(); }

Status DomainCounts::DrainHealer() {
  if (!healer_.joinable()) {
    for (;;) {
      std::vector<DomainKey> keys;
      {
        std::lock_guard lock(mu_);
        keys = TakeQueuedLocked(kHealBatch);
      }
      if (keys.empty()) break;
      RETURN_IF_ERROR(HealKeys(keys));
    }
  }
  std::unique_lock lock(mu_);
  draining_ = true;
  cv_.notify_all();
  cv_.wait(lock, [&] { return queue_.empty() && !healing_; });
  draining_ = false;
  return heal_error_;
}

HealerReport DomainCounts::healer_report() const {
  std::lock_guard lock(mu_);
  return report_;
}

int64_t DomainCounts::Count(const DomainKey& key) const { return store_->Counter(CounterName(key)); }

std::vector<std::pair<DomainKey, int64_t>> DomainCounts::TeamCounts(std::string_view team) const {
  std::vector<std::pair<DomainKey, int64_t>> out;
  std::string prefix(kCounterPrefix);
  prefix.append(team).push_back('\0');
  store_->ScanCounters(prefix, [&](std::string_view name, int64_t v) {
    DomainKey k;
    if (SplitKey(name.substr(kCounterPrefix.size()), &k)) out.emplace_back(std::move(k), v);
    return true;
  });
  return out;
}

StatusOr<std::vector<std::pair<DomainKey, int64_t>>> DomainCounts::AllCounts() const {
  std::set<DomainKey> keys;
  store_->ScanCounters(kCounterPrefix, [&](std::string_view name, int64_t) {
    DomainKey k;
    if (SplitKey(name.substr(kCounterPrefix.size()), &k)) keys.insert(std::move(k));
    return true;
  });
  std::string last;
  Status bad;
  RETURN_IF_ERROR(store_->ScanFamily(member_, [&](std::string_view row, std::string_view, std::string_view) {
    if (row == last) return true;
    last = row;
    DomainKey k;
    if (!SplitKey(row, &k)) {
      bad = Corruption("domain counts: malformed index row");
      return false;
    }
    keys.insert(std::move(k));
    return true;
  }));
  RETURN_IF_ERROR(bad);
  std::vector<std::pair<DomainKey, int64_t>> out;
  out.reserve(keys.size());
  for (const DomainKey& k : keys) out.emplace_back(k, Count(k));
  return out;
}

StatusOr<int64_t> DomainCounts::TrueCount(const DomainKey& key) const {
  int64_t n = 0;
  RETURN_IF_ERROR(store_->ScanRow(member_, IndexRow(key), [&](std::string_view, std::string_view) {
    ++n;
    return true;
  }));
  return n;
}

StatusOr<TeamSettings> DomainCounts::Team(std::string_view team) const {
  TeamSettings t;
  t.team = team;
  RETURN_IF_ERROR(store_->ScanRow(team_, team, [&](std::string_view d, std::string_view) {
    t.domains.emplace_back(d);
    return true;
  }));
  return t;
}

std::optional<Classification> ClassifyByContext(const TeamSettings& team, std::string_view inviter,
                                                std::string_view invitee, const pb::EmailConfig& config) {
  const std::string domain = DomainOf(invitee);
  if (std::find(team.domains.begin(), team.domains.end(), domain) != team.domains.end()) {
    return Classification{true, "the invitee's domain is one of the team's own", 0, 0, 0};
  }
  const bool is_public = std::find(config.domain_public().begin(), config.domain_public().end(), domain) !=
                         config.domain_public().end();
  if (!is_public && domain == DomainOf(inviter)) {
    return Classification{true, "the invitee's domain is the inviter's", 0, 0, 0};
  }
  return std::nullopt;
}

StatusOr<Classification> DomainCounts::Classify(const TeamSettings& team, std::string_view inviter,
                                                std::string_view invitee, const pb::EmailConfig& config) const {
  const std::string domain = DomainOf(invitee);
  if (domain.empty()) return InvalidArgument("invitee is not an email address");
  if (DomainOf(inviter).empty()) return InvalidArgument("inviter is not an email address");
  if (auto c = ClassifyByContext(team, inviter, invitee, config)) return *c;
  const std::unordered_set<std::string> member_roles(config.domain_member_roles().begin(),
                                                     config.domain_member_roles().end());
  Classification c;
  for (const auto& [key, raw] : TeamCounts(team.team)) {
    const int64_t n = std::max<int64_t>(raw, 0);  // a drifted negative count until healed
    const bool member = member_roles.count(key.role) > 0;
    if (member) c.team_members += n;
    if (key.domain != domain) continue;
    (member ? c.members : c.guests) += n;
  }
  char why[200];
  if (c.members < static_cast<int64_t>(config.domain_internal_min_members())) {
    std::snprintf(why, sizeof why, "%lld full members on the domain, fewer than %u", static_cast<long long>(c.members),
                  config.domain_internal_min_members());
  } else if (static_cast<double>(c.members) < config.domain_internal_min_member_share() * static_cast<double>(c.members + c.guests)) {
    std::snprintf(why, sizeof why, "full members are %.3f of the domain's users, under %.3f",
                  static_cast<double>(c.members) / static_cast<double>(c.members + c.guests),
                  config.domain_internal_min_member_share());
  } else if (static_cast<double>(c.members) < config.domain_internal_min_team_share() * static_cast<double>(c.team_members)) {
    std::snprintf(why, sizeof why, "the domain holds %.3f of the team's full members, under %.3f",
                  static_cast<double>(c.members) / static_cast<double>(c.team_members),
                  config.domain_internal_min_team_share());
  } else {
    c.internal = true;
    std::snprintf(why, sizeof why, "%lld full members on the domain (%.3f of its users, %.3f of the team's)",
                  static_cast<long long>(c.members),
                  static_cast<double>(c.members) / static_cast<double>(c.members + c.guests),
                  static_cast<double>(c.members) / static_cast<double>(std::max<int64_t>(c.team_members, 1)));
  }
  c.reason = why;
  return c;
}

}  // namespace neardup::email
