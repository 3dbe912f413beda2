#include "tier1/group_store.h"

#include <algorithm>
#include <array>
#include <limits>

#include "common/coding.h"

namespace neardup::tier1 {
namespace {

constexpr std::string_view kNextGroup = "next_group";

// What ContentGroupOf answers for a page record.
uint64_t ContentGroup(const pb::Tier1Page& p) { return p.has_signature() ? p.group() : 0; }

template <typename Msg>
Status ParseRecord(const std::string& bytes, Msg* out, std::string_view what, std::string_view key) {
  if (!out->ParseFromString(bytes)) {
    return Corruption("group store: unreadable " + std::string(what) + " record for " + std::string(key));
  }
  return Status::Ok();
}

// GroupStore::DecodeGroup, with the error every reader of the group store gives.
Status ParseGroup(std::string_view bytes, pb::Tier1Group* out, uint64_t group) {
  if (!GroupStore::DecodeGroup(bytes, out)) {
    return Corruption("group store: unreadable group record for " + std::to_string(group));
  }
  return Status::Ok();
}

// A member list packed for PackedRecords: each URL as its 4-byte little-endian length and bytes.
void AppendPacked(std::string_view url, std::string* out) {
  const size_t at = out->size();
  out->resize(at + 4);
  StoreLittleEndian(out->data() + at, url.size(), 4);
  out->append(url);
}

template <typename Visit>
void ForEachPacked(std::string_view packed, const Visit& visit) {
  for (size_t at = 0; at + 4 <= packed.size();) {
    const size_t n = LoadLittleEndian(packed.data() + at, 4);
    visit(packed.substr(at + 4, n));
    at += 4 + n;
  }
}

void PackMembers(const std::vector<std::string>& urls, std::string* out) {
  size_t n = 0;
  for (const std::string& url : urls) n += 4 + url.size();
  out->clear();
  out->reserve(n);
  for (const std::string& url : urls) AppendPacked(url, out);
}

void UnpackMembers(std::string_view packed, std::vector<std::string>* urls) {
  ForEachPacked(packed, [&](std::string_view url) { urls->emplace_back(url); });
}

// The sorted list `base` with a Txn's changes to it (column -> present?) applied, each URL of the
// result given to `emit` in order. `for_each_base(visit)` calls visit(url) for base's URLs in order.
template <typename ForEachBase, typename Emit>
void MergeChanges(const ForEachBase& for_each_base, const std::map<std::string, bool, std::less<>>& changes,
                  const Emit& emit) {
  auto c = changes.begin();
  for_each_base([&](std::string_view url) {
    for (; c != changes.end() && std::string_view(c->first) < url; ++c) {
      if (c->second) emit(c->first);
    }
    if (c != changes.end() && std::string_view(c->first) == url) {
      if (c->second) emit(url);
      ++c;
    } else {
      emit(url);
    }
  });
  for (; c != changes.end(); ++c) {
    if (c->second) emit(c->first);
  }
}

// *out = the sorted list `base` with the changes applied.
void ApplyChanges(const std::vector<std::string>& base, const std::map<std::string, bool, std::less<>>& changes,
                  std::vector<std::string>* out) {
  out->clear();
  MergeChanges([&](const auto& visit) { for (const std::string& url : base) visit(url); }, changes,
               [&](std::string_view url) { out->emplace_back(url); });
}

// The same on a packed list (PackMembers): *out = `packed` with the changes, packed, its URLs
// copied as bytes.
void ApplyChangesPacked(std::string_view packed, const std::map<std::string, bool, std::less<>>& changes,
                        std::string* out) {
  out->clear();
  out->reserve(packed.size() + changes.size() * 64);
  MergeChanges([&](const auto& visit) { ForEachPacked(packed, visit); }, changes,
               [&](std::string_view url) { AppendPacked(url, out); });
}

}  // namespace

GroupStore::GroupStore(std::unique_ptr<RowStore> rows, uint64_t (*url_hash)(std::string_view))
    : rows_(std::move(rows)),
      url_hash_(url_hash != nullptr ? url_hash : UrlHash),
      page_(rows_->family("page")),
      group_(rows_->family("group")),
      member_(rows_->family("member")),
      redirect_(rows_->family("redirect")),
      meta_(rows_->family("meta")) {}

StatusOr<std::unique_ptr<GroupStore>> GroupStore::Open(const Options& options) {
  RowStoreOptions o;
  o.path = options.path;
  o.families = {"page", "group", "member", "redirect", "meta"};
  o.sync = options.sync;
  o.cache_bytes = options.cache_bytes;
  o.compress = options.compress;
  o.write_buffer_bytes = options.write_buffer_bytes;
  o.async_writes = options.async_writes;
  o.clock = options.clock;
  o.env = options.env;
  o.read_only = options.read_only;
  ASSIGN_OR_RETURN(std::unique_ptr<RowStore> rows, RowStore::Open(o));
  std::unique_ptr<GroupStore> store(new GroupStore(std::move(rows), options.url_hash));
  RETURN_IF_ERROR(store->LoadRedirectTargets());
  RETURN_IF_ERROR(store->LoadKnownPages());
  return store;
}

Status GroupStore::LoadKnownPages() {
  Status bad;
  RETURN_IF_ERROR(rows_->ScanFamily(page_, [&](std::string_view url, std::string_view, std::string_view value) {
    pb::Tier1Page rec;
    if (!rec.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
      bad = Corruption("group store: unreadable page record for " + std::string(url));
      return false;
    }
    const uint64_t h = url_hash_(url);
    if (page_groups_.Contains(h)) colliding_.insert(h);
    page_groups_.Insert(h, ContentGroup(rec));
    return true;
  }));
  return bad;
}

Status GroupStore::LoadRedirectTargets() {
  return rows_->ScanFamily(redirect_, [&](std::string_view target, std::string_view, std::string_view) {
    redirect_targets_.emplace(target);
    return true;
  });
}

std::string GroupStore::GroupKey(uint64_t group) {
  std::string k;
  AppendBigEndian(&k, group, 8);
  return k;
}

uint64_t GroupStore::GroupFromKey(std::string_view key) {
  return ReadBigEndian(key.data(), static_cast<int>(std::min<size_t>(key.size(), 8)));
}

Status GroupStore::GetPage(std::string_view url, pb::Tier1Page* out) const {
  std::string bytes;
  RETURN_IF_ERROR(rows_->Get(page_, url, "", &bytes));
  return ParseRecord(bytes, out, "page", url);
}

Status GroupStore::GetGroup(uint64_t group, pb::Tier1Group* out) const {
  std::string bytes;
  RETURN_IF_ERROR(rows_->Get(group_, GroupKey(group), "", &bytes));
  return ParseGroup(bytes, out, group);
}

void GroupStore::EncodeGroup(pb::Tier1Group* rec, std::string* bytes) {
  // The kept set holds the winner once, first, as a rule: no more than one entry is emptied.
  std::string* winner_entry = nullptr;
  for (std::string& k : *rec->mutable_kept()) {
    if (!rec->winner().empty() && k == rec->winner()) {
      winner_entry = &k;
      break;
    }
  }
  std::string url;
  if (winner_entry != nullptr) winner_entry->swap(url);
  bytes->clear();
  rec->AppendToString(bytes);
  if (winner_entry != nullptr) winner_entry->swap(url);
}

bool GroupStore::DecodeGroup(std::string_view bytes, pb::Tier1Group* rec) {
  if (!rec->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return false;
  for (std::string& k : *rec->mutable_kept()) {
    if (k.empty()) k = rec->winner();
  }
  return true;
}

Status GroupStore::Members(uint64_t group, std::vector<std::string>* out) const {
  out->clear();
  return rows_->ScanRow(member_, GroupKey(group), [&](std::string_view column, std::string_view) {
    out->emplace_back(column);
    return true;
  });
}

// ---- Txn -------------------------------------------------------------------------------------

GroupStore::Txn::PageEntry* GroupStore::Txn::Cached(uint64_t hash, std::string_view url) {
  PageMemo& memo = page_memo_[hash & (kMemoSize - 1)];
  if (memo.entry != nullptr && memo.hash == hash && memo.entry->first == url) return memo.entry;
  auto it = pages_.find(url);
  if (it == pages_.end()) return nullptr;
  memo = {hash, &*it};
  return &*it;
}

GroupStore::Txn::GroupSlot* GroupStore::Txn::CachedGroup(uint64_t group) {
  GroupMemo& memo = group_memo_[group & (kMemoSize - 1)];
  if (memo.slot != nullptr && memo.group == group) return memo.slot;
  auto it = groups_.find(group);
  if (it == groups_.end()) return nullptr;
  memo = {group, &it->second};
  return &it->second;
}

void GroupStore::Txn::ClearMemos() {
  std::fill(page_memo_.begin(), page_memo_.end(), PageMemo());
  std::fill(group_memo_.begin(), group_memo_.end(), GroupMemo());
}

StatusOr<GroupStore::Txn::PageEntry*> GroupStore::Txn::LoadPage(const std::string& url) {
  const uint64_t h = store_->url_hash_(url);
  PageEntry* e = Cached(h, url);
  if (e == nullptr) {
    PageSlot slot;
    bool unpacked = false;
    if (packed_pages_.Take(h, &unpacked_)) {
      const std::string& p = unpacked_;
      const size_t n = LoadLittleEndian(p.data(), 4);
      if (std::string_view(p).substr(4, n) == url) {  // else another URL's, with the same hash
        if (!slot.rec.ParseFromArray(p.data() + 4 + n, static_cast<int>(p.size() - 4 - n))) {
          return Corruption("group store: unreadable packed page record for " + url);
        }
        slot.exists = slot.stored = unpacked = true;
        ++page_reads_.hits;
        ++page_reads_.unpacked;
      }
    }
    if (!unpacked) {
      // A URL the store has never recorded needs no read.
      const bool known = store_->page_groups_.Contains(h);
      ++(known ? page_reads_.reads : page_reads_.skipped);
      std::string bytes;
      Status s = known ? store_->rows_->Get(store_->page_, url, "", &bytes) : NotFound("");
      if (s.ok()) {
        RETURN_IF_ERROR(ParseRecord(bytes, &slot.rec, "page", url));
        slot.exists = slot.stored = true;
      } else if (s.code() != StatusCode::kNotFound) {
        return s;
      } else if (known) {
        store_->colliding_.insert(h);  // the hash is another URL's
      }
    }
    e = &*pages_.emplace(url, std::move(slot)).first;
    page_memo_[h & (kMemoSize - 1)] = {h, e};
  } else {
    ++page_reads_.hits;
  }
  e->second.used = epoch_;
  return e;
}

StatusOr<const pb::Tier1Page*> GroupStore::Txn::FindPage(const std::string& url) {
  ASSIGN_OR_RETURN(PageEntry * e, LoadPage(url));
  return e->second.exists ? &e->second.rec : nullptr;
}

StatusOr<uint64_t> GroupStore::Txn::ContentGroupOf(std::string_view url) {
  const uint64_t h = store_->url_hash_(url);
  if (PageEntry* e = Cached(h, url); e != nullptr) {
    ++page_reads_.hits;
    e->second.used = epoch_;
    return e->second.exists ? ContentGroup(e->second.rec) : 0;
  }
  uint64_t group = 0;
  if (!store_->page_groups_.Find(h, &group)) {
    ++page_reads_.skipped;
    return 0;
  }
  if (store_->colliding_.count(h) > 0) {
    ASSIGN_OR_RETURN(const pb::Tier1Page* p, FindPage(std::string(url)));
    return p != nullptr ? ContentGroup(*p) : 0;
  }
  ++page_reads_.indexed;
  return group;
}

StatusOr<pb::Tier1Page*> GroupStore::Txn::MutablePage(const std::string& url) {
  ASSIGN_OR_RETURN(PageEntry * e, LoadPage(url));
  PageSlot& slot = e->second;
  slot.exists = true;
  if (!slot.dirty) {
    slot.dirty = true;
    dirty_pages_.push_back(e);
  }
  return &slot.rec;
}

Status GroupStore::Txn::DeletePage(const std::string& url) {
  ASSIGN_OR_RETURN(PageEntry * e, LoadPage(url));
  PageSlot& slot = e->second;
  if (!slot.exists) return Status::Ok();
  slot.rec.Clear();
  slot.exists = false;
  if (!slot.dirty) {
    slot.dirty = true;
    dirty_pages_.push_back(e);
  }
  return Status::Ok();
}

StatusOr<GroupStore::Txn::GroupSlot*> GroupStore::Txn::LoadGroup(uint64_t group) {
  GroupSlot* found = CachedGroup(group);
  if (found == nullptr) {
    GroupSlot slot;
    std::string bytes;
    // An id above the committed counter was reserved by this Txn: nothing to read.
    const bool reserved = Reserved(group);
    const bool packed = packed_groups_.Take(group, &bytes);
    if (packed) {
      ++group_reads_.hits;
      ++group_reads_.unpacked;
    } else {
      ++(reserved ? group_reads_.skipped : group_reads_.reads);
    }
    Status s = packed     ? Status::Ok()
               : reserved ? NotFound("")
                          : store_->rows_->Get(store_->group_, GroupKey(group), "", &bytes);
    if (s.ok()) {
      RETURN_IF_ERROR(ParseGroup(bytes, &slot.rec, group));
      slot.exists = true;
    } else if (s.code() != StatusCode::kNotFound) {
      return s;
    }
    found = &groups_.emplace(group, std::move(slot)).first->second;
    group_memo_[group & (kMemoSize - 1)] = {group, found};
  } else {
    ++group_reads_.hits;
  }
  found->used = epoch_;
  return found;
}

StatusOr<const pb::Tier1Group*> GroupStore::Txn::FindGroup(uint64_t group) {
  ASSIGN_OR_RETURN(GroupSlot * slot, LoadGroup(group));
  return slot->exists ? &slot->rec : nullptr;
}

StatusOr<pb::Tier1Group*> GroupStore::Txn::MutableGroup(uint64_t group) {
  ASSIGN_OR_RETURN(GroupSlot * found, LoadGroup(group));
  GroupSlot& slot = *found;
  slot.exists = true;
  if (!slot.dirty) {
    slot.dirty = true;
    dirty_groups_.push_back(group);
  }
  slot.deleted = false;
  return &slot.rec;
}

void GroupStore::Txn::DeleteGroup(uint64_t group) {
  packed_groups_.Erase(group);  // its record changes here
  GroupSlot& slot = groups_[group];
  slot.used = epoch_;
  slot.rec.Clear();
  slot.exists = false;
  if (!slot.dirty) {
    slot.dirty = true;
    dirty_groups_.push_back(group);
  }
  slot.deleted = true;
}

bool GroupStore::Txn::Reserved(uint64_t group) const {
  return group > static_cast<uint64_t>(store_->rows_->Counter(kNextGroup));
}

uint64_t GroupStore::Txn::NewGroupId() {
  ++groups_reserved_;
  return static_cast<uint64_t>(store_->rows_->Counter(kNextGroup)) + groups_reserved_;
}

Status GroupStore::Txn::Merge(RowStore::Family family, const std::string& row,
                              const std::map<std::string, bool, std::less<>>* changes,
                              std::vector<std::string>* out) const {
  std::vector<std::string> scanned;
  std::vector<std::string>* base = changes == nullptr ? out : &scanned;
  base->clear();
  RETURN_IF_ERROR(store_->rows_->ScanRow(family, row, [&](std::string_view column, std::string_view) {
    base->emplace_back(column);
    return true;
  }));
  if (changes != nullptr) ApplyChanges(scanned, *changes, out);
  return Status::Ok();
}

Status GroupStore::Txn::Members(uint64_t group, std::vector<std::string>* out) {
  auto it = members_.find(group);
  const std::map<std::string, bool, std::less<>>* changes = it == members_.end() ? nullptr : &it->second;
  out->clear();
  if (Reserved(group)) {
    // Reserved by this Txn: the store has no member of it yet, so no scan.
    ++member_reads_.skipped;
    if (changes != nullptr) {
      for (const auto& [url, present] : *changes) {
        if (present) out->push_back(url);
      }
    }
    return Status::Ok();
  }
  auto cached = member_lists_.find(group);
  if (cached == member_lists_.end()) {
    MemberList list;
    if (packed_members_.Take(group, &unpacked_)) {
      UnpackMembers(unpacked_, &list.urls);
      ++member_reads_.hits;
      ++member_reads_.unpacked;
    } else {
      RETURN_IF_ERROR(Merge(store_->member_, GroupKey(group), nullptr, &list.urls));
      ++member_reads_.reads;
    }
    cached = member_lists_.emplace(group, std::move(list)).first;
  } else {
    ++member_reads_.hits;
  }
  cached->second.used = epoch_;
  if (changes == nullptr) *out = cached->second.urls;
  else ApplyChanges(cached->second.urls, *changes, out);
  return Status::Ok();
}

void GroupStore::Txn::AddMember(uint64_t group, const std::string& url) { members_[group][url] = true; }
void GroupStore::Txn::RemoveMember(uint64_t group, const std::string& url) { members_[group][url] = false; }

Status GroupStore::Txn::Redirectors(const std::string& target, std::vector<std::string>* out) {
  auto it = redirects_.find(target);
  if (it == redirects_.end() && store_->redirect_targets_.count(target) == 0) {
    out->clear();  // nobody redirects here: no scan
    return Status::Ok();
  }
  return Merge(store_->redirect_, target, it == redirects_.end() ? nullptr : &it->second, out);
}

void GroupStore::Txn::AddRedirect(const std::string& target, const std::string& source) {
  redirects_[target][source] = true;
}
void GroupStore::Txn::RemoveRedirect(const std::string& target, const std::string& source) {
  redirects_[target][source] = false;
}

void GroupStore::Txn::PutMeta(std::string_view row, std::string_view value) {
  batch_.Put(store_->meta_, row, "", value);
}

bool GroupStore::Txn::empty() const {
  return batch_.empty() && members_.empty() && redirects_.empty() && groups_reserved_ == 0 &&
         dirty_pages_.empty() && dirty_groups_.empty();
}

Status GroupStore::Txn::Commit(bool durable, bool keep_cache) {
  std::string bytes;
  StageRecords(&bytes);
  std::vector<std::pair<std::string, bool>> targets_after;
  if (Status m = StageRedirects(&targets_after); !m.ok()) {
    Discard();
    return m;
  }
  // Ids above this one were reserved by this Txn (read before the write moves the counter).
  const uint64_t committed_next_group = static_cast<uint64_t>(store_->rows_->Counter(kNextGroup));
  if (groups_reserved_ > 0) batch_.AddCounter(kNextGroup, static_cast<int64_t>(groups_reserved_));
  batch_.set_durable(durable);
  Status s = batch_.empty() ? Status::Ok() : store_->rows_->Write(batch_);
  if (s.ok()) UpdateStoreIndexes(&targets_after);
  if (s.ok() && keep_cache) {
    KeepCommittedCache(committed_next_group, &bytes);
  } else {
    Discard();
  }
  return s;
}

void GroupStore::Txn::StageRecords(std::string* bytes) {
  for (const PageEntry* e : dirty_pages_) {
    if (!e->second.exists) {  // deleted
      if (e->second.stored) batch_.Delete(store_->page_, e->first, "");
      continue;
    }
    e->second.rec.SerializeToString(bytes);
    batch_.Put(store_->page_, e->first, "", *bytes);
  }
  for (uint64_t g : dirty_groups_) {
    GroupSlot& slot = groups_[g];
    if (slot.deleted) {
      batch_.Delete(store_->group_, GroupKey(g), "");
    } else {
      EncodeGroup(&slot.rec, bytes);
      batch_.Put(store_->group_, GroupKey(g), "", *bytes);
    }
  }
  for (const auto& [g, changes] : members_) {
    const std::string row = GroupKey(g);
    for (const auto& [url, present] : changes) {
      if (present) batch_.Put(store_->member_, row, url, "");
      else batch_.Delete(store_->member_, row, url);
    }
  }
}

Status GroupStore::Txn::StageRedirects(std::vector<std::pair<std::string, bool>>* targets_after) {
  std::vector<std::string> sources;
  for (const auto& [target, changes] : redirects_) {
    for (const auto& [source, present] : changes) {
      if (present) batch_.Put(store_->redirect_, target, source, "");
      else batch_.Delete(store_->redirect_, target, source);
    }
    // A source added leaves the target redirected to; one the store did not know of has no
    // sources to lose. Only removals from a known target need its list.
    bool any = false;
    for (const auto& [source, present] : changes) any = any || present;
    if (!any && store_->redirect_targets_.count(target) > 0) {
      RETURN_IF_ERROR(Merge(store_->redirect_, target, &changes, &sources));
      any = !sources.empty();
    }
    targets_after->emplace_back(target, any);
  }
  return Status::Ok();
}

void GroupStore::Txn::UpdateStoreIndexes(std::vector<std::pair<std::string, bool>>* targets_after) {
  for (PageEntry* e : dirty_pages_) {
    PageSlot& slot = e->second;
    if (!slot.exists && !slot.stored) continue;  // made and deleted in this Txn: the store never had it
    const uint64_t h = store_->url_hash_(e->first);
    // A URL new to the store whose hash is already taken shares it with another. A deleted
    // page's hash stays, with no group (its record is cleared).
    if (!slot.stored && store_->page_groups_.Contains(h)) store_->colliding_.insert(h);
    store_->page_groups_.Insert(h, ContentGroup(slot.rec));
    slot.stored = true;
  }
  for (auto& [target, any] : *targets_after) {
    if (any) store_->redirect_targets_.insert(std::move(target));
    else store_->redirect_targets_.erase(target);
  }
}

void GroupStore::Txn::KeepCommittedCache(uint64_t committed_next_group, std::string* bytes) {
  // The committed member lists after this Txn: a kept list takes the changes (a packed one
  // stays packed); a group new to the store (reserved by this Txn) starts its list with them.
  for (const auto& [g, changes] : members_) {
    auto it = member_lists_.find(g);
    if (it == member_lists_.end()) {
      if (packed_members_.Take(g, &unpacked_)) {
        ApplyChangesPacked(unpacked_, changes, bytes);
        packed_members_.Put(g, *bytes, epoch_);
        continue;
      }
      if (g <= committed_next_group) continue;  // never read: nothing to keep current
      it = member_lists_.emplace(g, MemberList()).first;
    }
    std::vector<std::string> after;
    ApplyChanges(it->second.urls, changes, &after);
    it->second.urls.swap(after);
    it->second.used = epoch_;
  }
  for (PageEntry* e : dirty_pages_) e->second.dirty = false;
  for (uint64_t g : dirty_groups_) {
    auto it = groups_.find(g);
    if (it == groups_.end()) continue;
    if (it->second.deleted) {
      if (GroupMemo& m = group_memo_[g & (kMemoSize - 1)]; m.slot == &it->second) m = GroupMemo();
      groups_.erase(it);
    } else {
      it->second.dirty = false;
    }
  }
  ClearPending();
  ++epoch_;
}

void GroupStore::Txn::ShrinkPacked(size_t bound) {
  const size_t total = packed_bytes();
  if (total <= bound) return;
  for (PackedRecords* m : {&packed_pages_, &packed_groups_, &packed_members_}) {
    const double share = static_cast<double>(m->bytes()) / static_cast<double>(total);
    m->Shrink(static_cast<size_t>(static_cast<double>(bound) * share), epoch_);
  }
}

Status GroupStore::Txn::Evict(size_t keep, size_t packed_bytes) {
  if (!empty()) return FailedPrecondition("group store: Evict with uncommitted changes");
  if (cached() <= keep) return Status::Ok();
  // Records per age in Commits (the last bucket holds every older one), then the oldest age kept.
  constexpr uint32_t kAges = 64;
  std::array<size_t, kAges> by_age{};
  auto age = [&](uint32_t used) { return std::min<uint32_t>(epoch_ - used, kAges - 1); };
  for (const auto& [url, slot] : pages_) ++by_age[age(slot.used)];
  for (const auto& [gid, slot] : groups_) ++by_age[age(slot.used)];
  size_t kept = 0;
  uint32_t oldest = 0;  // ages <= oldest are kept; age 0 (read since the last Commit) always
  for (uint32_t a = 0; a < kAges; ++a) {
    kept += by_age[a];
    if (a > 0 && kept > keep) break;
    oldest = a;
  }
  ClearMemos();
  const bool pack = packed_bytes > 0;
  std::string bytes;
  std::erase_if(pages_, [&](const auto& e) {
    if (age(e.second.used) <= oldest) return false;
    if (pack && e.second.exists && e.second.stored) {  // the store's record, as committed
      bytes.clear();
      bytes.reserve(4 + e.first.size() + e.second.rec.ByteSizeLong());
      bytes.resize(4);
      StoreLittleEndian(bytes.data(), e.first.size(), 4);
      bytes += e.first;
      e.second.rec.AppendToString(&bytes);
      packed_pages_.Put(store_->url_hash_(e.first), bytes, e.second.used);
    }
    return true;
  });
  for (auto it = groups_.begin(); it != groups_.end();) {
    if (age(it->second.used) <= oldest) {
      ++it;
      continue;
    }
    if (pack && it->second.exists) {
      EncodeGroup(&it->second.rec, &bytes);  // packed as stored: the winner's URL once
      packed_groups_.Put(it->first, bytes, it->second.used);
    }
    it = groups_.erase(it);
  }
  std::erase_if(member_lists_, [&](const auto& e) {
    if (age(e.second.used) <= oldest) return false;
    if (pack) {
      PackMembers(e.second.urls, &bytes);
      packed_members_.Put(e.first, bytes, e.second.used);
    }
    return true;
  });
  if (pack) ShrinkPacked(packed_bytes);
  return Status::Ok();
}

void GroupStore::Txn::Discard() {
  ClearMemos();
  pages_.clear();
  groups_.clear();
  member_lists_.clear();
  for (PackedRecords* m : {&packed_pages_, &packed_groups_, &packed_members_}) m->Clear();
  ClearPending();
}

void GroupStore::Txn::ClearPending() {
  dirty_pages_.clear();
  dirty_groups_.clear();
  members_.clear();
  redirects_.clear();
  groups_reserved_ = 0;
  batch_.Clear();
}

}  // namespace neardup::tier1
