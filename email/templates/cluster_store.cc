#include "email/templates/cluster_store.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <optional>
#include <unordered_map>

#include "common/coding.h"

namespace neardup::email {

namespace {

// The hot state of one row.
struct HotRow {
  std::deque<int64_t> email_expiry;                  // one per live stored email, ascending
  std::deque<std::pair<int64_t, uint64_t>> user_log; // (expiry, recipient), ascending
  std::unordered_map<uint64_t, int64_t> users;       // recipient -> its latest expiry
  bool has_template = false;
  int64_t template_created_ms = 0;
  int64_t template_expiry_ms = 0;
  uint32_t emails_at_formation = 0;
  // Emails taken into this state whose row-store write has not returned yet: a read of the row's
  // cells waits for them (ClusterStore::ReadEmails), so that it sees every email counted.
  uint32_t writing = 0;

  // Drops what expired by `now`.
  void Age(int64_t now) {
    while (!email_expiry.empty() && email_expiry.front() <= now) email_expiry.pop_front();
    while (!user_log.empty() && user_log.front().first <= now) {
      auto it = users.find(user_log.front().second);
      if (it != users.end() && it->second <= now) users.erase(it);
      user_log.pop_front();
    }
    if (has_template && template_expiry_ms <= now) {
      has_template = false;
      template_created_ms = 0;
    }
  }
  void AddUser(uint64_t recipient, int64_t expiry) {
    users[recipient] = expiry;
    user_log.emplace_back(expiry, recipient);
  }
  bool Empty() const { return email_expiry.empty() && users.empty() && !has_template && writing == 0; }
  RowCounts Counts() const {
    RowCounts c;
    c.emails = static_cast<uint32_t>(email_expiry.size());
    c.users = static_cast<uint32_t>(users.size());
    c.has_template = has_template;
    c.template_created_ms = template_created_ms;
    c.emails_at_formation = emails_at_formation;
    return c;
  }
};

}  // namespace

struct ClusterStore::Shard {
  mutable std::mutex mu;
  std::condition_variable written;  // a row's `writing` went down
  std::unordered_map<uint64_t, HotRow> rows;
};

std::string KeyBytes(uint64_t v) {
  std::string s;
  AppendBigEndian(&s, v, 8);
  return s;
}

ClusterStore::ClusterStore(const ClusterStoreOptions& options)
    : options_(options), clock_(options.clock != nullptr ? options.clock : SystemClock()) {
  const size_t n = options_.ranges.empty() ? 1 : options_.ranges.size();
  for (size_t i = 0; i < n; ++i) shards_.push_back(std::make_unique<Shard>());
}

ClusterStore::~ClusterStore() = default;

StatusOr<std::unique_ptr<ClusterStore>> ClusterStore::Open(const ClusterStoreOptions& options) {
  if (options.max_emails_per_row == 0) return InvalidArgument("cluster store: max_emails_per_row must be at least 1");
  if (options.email_ttl_ms <= 0 || options.template_ttl_ms <= 0) {
    return InvalidArgument("cluster store: TTLs must be positive");
  }
  std::unique_ptr<ClusterStore> s(new ClusterStore(options));
  RowStoreOptions ro;
  ro.path = options.path;
  ro.families = {"template", "email", "user"};
  ro.sync = options.sync;
  ro.async_writes = options.async_writes;
  ro.clock = s->clock_;
  ro.env = options.env;
  ro.compress = true;
  ASSIGN_OR_RETURN(s->store_, RowStore::Open(ro));
  s->template_ = s->store_->family("template");
  s->email_ = s->store_->family("email");
  s->user_ = s->store_->family("user");
  RETURN_IF_ERROR(s->Rebuild());
  return s;
}

size_t ClusterStore::Shards() const { return shards_.size(); }

size_t ClusterStore::ShardOf(uint64_t row) const {
  return options_.ranges.empty() ? 0 : partitioner::FindRange(options_.ranges, row);
}

Status ClusterStore::Rebuild() {
  const int64_t now = Now();
  Status bad;
  RETURN_IF_ERROR(store_->ScanFamily(email_, [&](std::string_view row, std::string_view, std::string_view value) {
    pb::StoredEmail e;
    if (row.size() != 8 || !e.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
      bad = Corruption("cluster store: unreadable email cell");
      return false;
    }
    const uint64_t key = ReadBigEndian(row.data(), 8);
    HotRow& h = shards_[ShardOf(key)]->rows[key];
    const int64_t expiry = e.stored_ms() + options_.email_ttl_ms;
    if (expiry <= now) return true;
    // Cells are scanned by id, not time: keep the expiries sorted.
    h.email_expiry.insert(std::upper_bound(h.email_expiry.begin(), h.email_expiry.end(), expiry), expiry);
    auto it = h.users.find(e.recipient());
    if (it == h.users.end() || it->second < expiry) h.users[e.recipient()] = expiry;
    return true;
  }));
  RETURN_IF_ERROR(bad);
  for (auto& shard : shards_) {
    for (auto& [key, h] : shard->rows) {
      for (const auto& [r, expiry] : h.users) h.user_log.emplace_back(expiry, r);
      std::sort(h.user_log.begin(), h.user_log.end());
    }
  }
  RETURN_IF_ERROR(ScanTemplates([&](uint64_t row, const pb::EmailTemplate& t) {
    HotRow& h = shards_[ShardOf(row)]->rows[row];
    h.has_template = true;
    h.template_created_ms = std::max(h.template_created_ms, t.created_ms());
    h.template_expiry_ms = std::max(h.template_expiry_ms, t.created_ms() + options_.template_ttl_ms);
    h.emails_at_formation = std::max(h.emails_at_formation, t.emails());
    return true;
  }));
  return Status::Ok();
}

StatusOr<RowCounts> ClusterStore::AddEmail(uint64_t row, const pb::StoredEmail& email) {
  const NewEmail item{row, &email};
  std::vector<RowCounts> counts;
  RETURN_IF_ERROR(AddEmails(std::span<const NewEmail>(&item, 1), &counts));
  return counts.front();
}

namespace {

// The email's serialised message with stored_ms (field 8, varint) appended: one serialisation,
// no copy of the message.
void AppendCell(const pb::StoredEmail& email, int64_t now, std::string* cell) {
  cell->clear();
  cell->reserve(static_cast<size_t>(email.ByteSizeLong()) + 11);
  email.AppendToString(cell);
  cell->push_back(static_cast<char>(8 << 3));
  for (uint64_t v = static_cast<uint64_t>(now);; v >>= 7) {
    if (v < 0x80) {
      cell->push_back(static_cast<char>(v));
      break;
    }
    cell->push_back(static_cast<char>((v & 0x7F) | 0x80));
  }
}

}  // namespace

Status ClusterStore::AddEmails(std::span<const NewEmail> emails, std::vector<RowCounts>* counts) {
  const int64_t now = Now();
  const int64_t expiry = now + options_.email_ttl_ms;
  counts->assign(emails.size(), RowCounts{});
  struct Undo {
    uint64_t row;
    uint64_t recipient;
    std::optional<int64_t> user_before;  // the recipient's expiry before, if it counted
  };
  std::vector<Undo> undo;
  RowBatch b;
  std::string cell;
  for (size_t i = 0; i < emails.size(); ++i) {
    const uint64_t row = emails[i].row;
    const pb::StoredEmail& email = *emails[i].email;
    Shard& shard = *shards_[ShardOf(row)];
    {
      // The hot state takes the email under the lock; the write goes on outside it, so that other
      // rows of the shard are not held up by LevelDB.
      std::lock_guard<std::mutex> lock(shard.mu);
      HotRow& h = shard.rows[row];
      h.Age(now);
      if (h.email_expiry.size() >= options_.max_emails_per_row) {
        (*counts)[i] = h.Counts();
        continue;
      }
      Undo u{row, email.recipient(), std::nullopt};
      if (auto it = h.users.find(email.recipient()); it != h.users.end()) u.user_before = it->second;
      undo.push_back(u);
      h.email_expiry.push_back(expiry);
      h.AddUser(email.recipient(), expiry);
      ++h.writing;
      (*counts)[i] = h.Counts();
      (*counts)[i].stored = true;
    }
    const std::string key = KeyBytes(row);
    AppendCell(email, now, &cell);
    b.Put(email_, key, email.id(), cell, options_.email_ttl_ms);
    b.Put(user_, key, KeyBytes(email.recipient()), "", options_.email_ttl_ms);
  }
  if (undo.empty()) return Status::Ok();
  b.AddCounter("email.stored", static_cast<int64_t>(undo.size()));
  const Status s = store_->Write(b);
  // The write returned: the rows' cells are readable (or, on failure, the emails are taken back
  // out of the hot state, last first). Either way the readers waiting for these rows may go on.
  for (auto u = undo.rbegin(); u != undo.rend(); ++u) {
    Shard& shard = *shards_[ShardOf(u->row)];
    std::lock_guard<std::mutex> lock(shard.mu);
    HotRow& h = shard.rows[u->row];
    --h.writing;
    if (!s.ok()) {
      if (auto it = std::find(h.email_expiry.rbegin(), h.email_expiry.rend(), expiry); it != h.email_expiry.rend()) {
        h.email_expiry.erase(std::next(it).base());
      }
      if (auto it = h.users.find(u->recipient); it != h.users.end() && it->second == expiry) {
        if (u->user_before && *u->user_before > now) {
          it->second = *u->user_before;
        } else {
          h.users.erase(it);
        }
      }
    }
    if (h.writing == 0) shard.written.notify_all();
  }
  if (!s.ok()) {
    for (auto& c : *counts) c.stored = false;
  }
  return s;
}

RowCounts ClusterStore::Counts(uint64_t row) const {
  Shard& shard = *shards_[ShardOf(row)];
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.rows.find(row);
  if (it == shard.rows.end()) return {};
  it->second.Age(Now());  // the hot state ages lazily, under the shard's lock
  return it->second.Counts();
}

Status ClusterStore::ReadEmails(uint64_t row, std::vector<pb::StoredEmail>* out) const {
  out->clear();
  {
    // Another thread may have counted an email of this row and not yet written it.
    Shard& shard = *shards_[ShardOf(row)];
    std::unique_lock<std::mutex> lock(shard.mu);
    shard.written.wait(lock, [&] {
      auto it = shard.rows.find(row);
      return it == shard.rows.end() || it->second.writing == 0;
    });
  }
  Status bad;
  RETURN_IF_ERROR(store_->ScanRow(email_, KeyBytes(row), [&](std::string_view, std::string_view value) {
    pb::StoredEmail e;
    if (!e.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
      bad = Corruption("cluster store: unreadable email cell in row " + std::to_string(row));
      return false;
    }
    out->push_back(std::move(e));
    return true;
  }));
  return bad;
}

Status ClusterStore::ReadTemplates(uint64_t row, std::vector<pb::EmailTemplate>* out) const {
  out->clear();
  Status bad;
  RETURN_IF_ERROR(store_->ScanRow(template_, KeyBytes(row), [&](std::string_view, std::string_view value) {
    pb::EmailTemplate t;
    if (!t.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
      bad = Corruption("cluster store: unreadable template cell in row " + std::to_string(row));
      return false;
    }
    out->push_back(std::move(t));
    return true;
  }));
  return bad;
}

Status ClusterStore::WriteTemplates(uint64_t row, const std::vector<pb::EmailTemplate>& templates,
                                    uint32_t emails_at_formation) {
  const int64_t now = Now();
  std::vector<pb::EmailTemplate> old;
  RETURN_IF_ERROR(ReadTemplates(row, &old));
  const std::string key = KeyBytes(row);
  RowBatch b;
  for (const auto& t : old) b.Delete(template_, key, KeyBytes(t.id()));
  for (const auto& t : templates) b.Put(template_, key, KeyBytes(t.id()), t.SerializeAsString(), options_.template_ttl_ms);
  b.AddCounter("email.templates_written", static_cast<int64_t>(templates.size()));
  RETURN_IF_ERROR(store_->Write(b));  // outside the shard's lock: rows are formed one at a time each
  Shard& shard = *shards_[ShardOf(row)];
  std::lock_guard<std::mutex> lock(shard.mu);
  HotRow& h = shard.rows[row];
  h.emails_at_formation = emails_at_formation;
  if (!templates.empty()) {
    h.has_template = true;
    h.template_created_ms = now;
    h.template_expiry_ms = now + options_.template_ttl_ms;
  } else if (!old.empty()) {
    h.has_template = false;
    h.template_created_ms = 0;
  }
  return Status::Ok();
}

Status ClusterStore::ScanTemplates(const std::function<bool(uint64_t row, const pb::EmailTemplate&)>& fn) const {
  Status bad;
  RETURN_IF_ERROR(store_->ScanFamily(template_, [&](std::string_view row, std::string_view, std::string_view value) {
    pb::EmailTemplate t;
    if (row.size() != 8 || !t.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
      bad = Corruption("cluster store: unreadable template cell");
      return false;
    }
    return fn(ReadBigEndian(row.data(), 8), t);
  }));
  return bad;
}

StatusOr<uint64_t> ClusterStore::Expire() {
  ASSIGN_OR_RETURN(uint64_t deleted, store_->PurgeExpired());
  const int64_t now = Now();
  for (auto& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard->mu);
    for (auto it = shard->rows.begin(); it != shard->rows.end();) {
      it->second.Age(now);
      it = it->second.Empty() ? shard->rows.erase(it) : std::next(it);
    }
  }
  return deleted;
}

uint64_t ClusterStore::Rows() const {
  uint64_t n = 0;
  for (const auto& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard->mu);
    n += shard->rows.size();
  }
  return n;
}

int64_t ClusterStore::TemplatesWritten() const { return store_->Counter("email.templates_written"); }
int64_t ClusterStore::EmailsStored() const { return store_->Counter("email.stored"); }
uint64_t ClusterStore::DiskBytes() const { return store_->DiskBytes(); }
Status ClusterStore::WaitForWrites() const { return store_->WaitForWrites(); }

}  // namespace neardup::email
