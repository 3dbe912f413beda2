// Placement and its state (pipeline/placement.h).
#include "pipeline/placement.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>

#include <fmt/format.h>

#include "storage/file_env.h"

namespace neardup::pipeline {
namespace fs = std::filesystem;
namespace {

constexpr const char* kParamsRow = "params";
constexpr const char* kJournalRow = "move";
constexpr const char* kServersRow = "tier2_servers";

const char* FileName(MapFile file) {
  switch (file) {
    case MapFile::kServed: return "map.pb";
    case MapFile::kNext: return "map-next.pb";
    case MapFile::kPrev: return "map-prev.pb";
  }
  return "map.pb";
}

// The first of `files` whose map's digest is `digest` (a file that is missing or holds no valid
// map is passed over).
StatusOr<partitioner::PartitionMap> LoadByDigest(const PlacementState& state, std::initializer_list<MapFile> files,
                                                 uint64_t digest, const std::string& what) {
  for (MapFile f : files) {
    StatusOr<std::string> bytes = state.ReadMap(f);
    if (!bytes.ok()) continue;
    pb::PartitionMap p;
    if (!p.ParseFromString(*bytes)) continue;
    auto m = partitioner::PartitionMap::FromProto(std::move(p));
    if (m.ok() && MapDigest(*m) == digest) return m;
  }
  std::string names;
  for (MapFile f : files) names += (names.empty() ? "" : ", ") + state.MapName(f);
  return Corruption(fmt::format("{}: none of {} is the partition map the store records ({:016x})", what, names, digest));
}

std::vector<std::string> SplitServers(std::string_view text) {
  std::vector<std::string> v;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    v.emplace_back(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return v;
}

}  // namespace

// ---- StorePlacementState ------------------------------------------------------------------------

std::string StorePlacementState::MapName(MapFile file) const { return layout_.dir + "/" + FileName(file); }

StatusOr<std::string> StorePlacementState::ReadMap(MapFile file) const {
  const std::string path = MapName(file);
  std::error_code ec;
  if (!fs::exists(path, ec)) return NotFound(path + " does not exist");
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read partition map " + path + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return IoError("cannot read partition map " + path);
  return ss.str();
}

Status StorePlacementState::WriteMap(MapFile file, const std::string& bytes, bool sync) {
  return WriteFileAtomically(FileEnv::Default(), MapName(file), bytes, sync);
}

Status StorePlacementState::RenameMap(MapFile from, MapFile to) {
  std::error_code ec;
  if (!fs::exists(MapName(from), ec)) return NotFound(MapName(from) + " does not exist");
  fs::rename(MapName(from), MapName(to), ec);
  if (ec) return IoError("move: cannot rename " + MapName(from) + " to " + MapName(to) + ": " + ec.message());
  return Status::Ok();
}

void StorePlacementState::RemoveMap(MapFile file) {
  std::error_code ec;
  fs::remove(MapName(file), ec);
}

StatusOr<std::string> StorePlacementState::ReadRow(const std::string& key) const {
  std::string bytes;
  RETURN_IF_ERROR(groups_->rows().Get(groups_->meta_family(), key, "", &bytes));
  return bytes;
}

Status StorePlacementState::WriteRows(std::span<const RowWrite> rows) {
  if (writable_ == nullptr) return FailedPrecondition("store " + layout_.dir + " is open for reading only");
  RowBatch b;
  for (const RowWrite& r : rows) {
    if (r.value.has_value()) b.Put(writable_->meta_family(), r.key, "", *r.value);
    else b.Delete(writable_->meta_family(), r.key, "");
  }
  RETURN_IF_ERROR(writable_->rows().Write(b));
  return writable_->rows().WaitForWrites();
}

// ---- MemoryPlacementState -----------------------------------------------------------------------

std::string MemoryPlacementState::MapName(MapFile file) const { return FileName(file); }

StatusOr<std::string> MemoryPlacementState::ReadMap(MapFile file) const {
  auto it = maps.find(file);
  if (it == maps.end()) return NotFound(std::string(FileName(file)) + " does not exist");
  return it->second;
}

Status MemoryPlacementState::WriteMap(MapFile file, const std::string& bytes, bool) {
  if (fail_writes) return IoError(std::string("cannot write ") + FileName(file));
  maps[file] = bytes;
  return Status::Ok();
}

Status MemoryPlacementState::RenameMap(MapFile from, MapFile to) {
  if (fail_writes) return IoError(std::string("cannot rename ") + FileName(from));
  auto it = maps.find(from);
  if (it == maps.end()) return NotFound(std::string(FileName(from)) + " does not exist");
  std::string bytes = std::move(it->second);
  maps.erase(it);
  maps[to] = std::move(bytes);
  return Status::Ok();
}

void MemoryPlacementState::RemoveMap(MapFile file) {
  if (!fail_writes) maps.erase(file);
}

StatusOr<std::string> MemoryPlacementState::ReadRow(const std::string& key) const {
  auto it = rows.find(key);
  if (it == rows.end()) return NotFound("no meta row " + key);
  return it->second;
}

Status MemoryPlacementState::WriteRows(std::span<const RowWrite> writes) {
  if (fail_writes) return IoError("cannot write the meta rows");
  for (const RowWrite& r : writes) {
    if (r.value.has_value()) rows[r.key] = *r.value;
    else rows.erase(r.key);
  }
  return Status::Ok();
}

// ---- Servers ------------------------------------------------------------------------------------

std::string JoinServers(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

StatusOr<std::optional<ShardServers>> ReadShardServers(const PlacementState& state) {
  StatusOr<std::string> bytes = state.ReadRow(kServersRow);
  if (bytes.status().code() == StatusCode::kNotFound) return std::optional<ShardServers>();
  RETURN_IF_ERROR(bytes.status());
  ShardServers r;
  std::string_view text = *bytes;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.starts_with("before=")) r.before = SplitServers(line.substr(7));
    else if (line.starts_with("after=")) r.after = SplitServers(line.substr(6));
    else return Corruption("group store: meta row " + std::string(kServersRow) + " holds \"" + std::string(line) + "\"");
  }
  return std::optional<ShardServers>(std::move(r));
}

Status WriteShardServers(PlacementState* state, const ShardServers& r) {
  std::string text = "after=" + JoinServers(r.after);
  if (!r.before.empty()) text = "before=" + JoinServers(r.before) + "\n" + text;
  const PlacementState::RowWrite w{kServersRow, std::move(text)};
  return state->WriteRows(std::span(&w, 1));
}

void MoveServerPlacement(const std::vector<std::string>& before, uint32_t shards_before,
                         const std::vector<std::string>& after, uint32_t shards_after,
                         std::vector<std::string>* servers, std::vector<uint32_t>* placement) {
  *servers = before;
  for (const std::string& a : after) {
    if (std::find(servers->begin(), servers->end(), a) == servers->end()) servers->push_back(a);
  }
  placement->clear();
  for (uint32_t m = 0; m < std::max(shards_before, shards_after); ++m) {
    const std::string& at = m < shards_after ? after[m % after.size()] : before[m % before.size()];
    placement->push_back(static_cast<uint32_t>(std::find(servers->begin(), servers->end(), at) - servers->begin()));
  }
}

// ---- The journal and the maps -------------------------------------------------------------------

StatusOr<pb::MoveJournal> ReadMoveJournal(const PlacementState& state) {
  ASSIGN_OR_RETURN(const std::string bytes, state.ReadRow(kJournalRow));
  pb::MoveJournal j;
  if (!j.ParseFromString(bytes)) return Corruption("group store: unreadable move journal");
  return j;
}

StatusOr<pb::MoveJournal> ReadMoveJournal(const tier1::GroupStore& groups) {
  return ReadMoveJournal(StorePlacementState(StoreLayout{}, &groups));
}

StatusOr<std::pair<partitioner::PartitionMap, partitioner::PartitionMap>> LoadMoveMaps(const PlacementState& state,
                                                                                      const pb::MoveJournal& j) {
  ASSIGN_OR_RETURN(partitioner::PartitionMap before,
                   LoadByDigest(state, {MapFile::kPrev, MapFile::kServed}, j.digest_before(), "move journal's old map"));
  ASSIGN_OR_RETURN(partitioner::PartitionMap after,
                   LoadByDigest(state, {MapFile::kNext, MapFile::kServed}, j.digest_after(), "move journal's new map"));
  return std::make_pair(std::move(before), std::move(after));
}

// ---- Placement ----------------------------------------------------------------------------------

Placement::Placement(partitioner::PartitionMap map) : after_(std::move(map)), generation_(after_.proto().generation()) {}

Placement::Placement(partitioner::PartitionMap before, partitioner::PartitionMap after, std::vector<uint32_t> parent,
                     pb::MoveJournal journal, uint64_t generation)
    : before_(std::move(before)), after_(std::move(after)), parent_(std::move(parent)), split_(before_->cells(), false),
      journal_(std::move(journal)), generation_(generation) {
  for (uint32_t c = before_->cells(); c < after_.cells(); ++c) split_[parent_[c]] = true;
  if (journal_.state() == pb::MoveJournal::DROP) flipped_.store(true, std::memory_order_release);
}

StatusOr<std::unique_ptr<Placement>> Placement::Load(const PlacementState& state) {
  StatusOr<std::string> bytes = state.ReadRow(kParamsRow);
  if (bytes.status().code() == StatusCode::kNotFound) return NotFound("the store records no parameters");
  RETURN_IF_ERROR(bytes.status());
  pb::StoreParams p;
  if (!p.ParseFromString(*bytes)) return Corruption("group store: unreadable parameters");
  return Load(state, p);
}

StatusOr<std::unique_ptr<Placement>> Placement::Load(const PlacementState& state, const pb::StoreParams& params) {
  ASSIGN_OR_RETURN(partitioner::PartitionMap served,
                   LoadByDigest(state, {MapFile::kServed, MapFile::kNext}, params.map_digest(), state.Name()));
  StatusOr<pb::MoveJournal> j = ReadMoveJournal(state);
  if (j.status().code() == StatusCode::kNotFound) return std::unique_ptr<Placement>(new Placement(std::move(served)));
  RETURN_IF_ERROR(j.status());
  if (j->state() != pb::MoveJournal::COPY && j->state() != pb::MoveJournal::DROP) {
    return Corruption("group store: a move journal in an unknown state");
  }
  ASSIGN_OR_RETURN(auto maps, LoadMoveMaps(state, *j));
  auto parent = partitioner::CellParents(maps.second, maps.first);
  if (!parent.ok()) return Corruption("move journal: " + parent.status().message());
  const uint64_t generation = served.proto().generation();
  return std::unique_ptr<Placement>(new Placement(std::move(maps.first), std::move(maps.second), std::move(*parent),
                                                  std::move(*j), generation));
}

StatusOr<std::unique_ptr<Placement>> Placement::Create(PlacementState* state, partitioner::PartitionMap map,
                                                      pb::StoreParams* params, bool sync) {
  params->set_shards(map.shards());
  params->set_map_generation(map.proto().generation());
  params->set_map_digest(MapDigest(map));
  std::string bytes;
  map.proto().SerializeToString(&bytes);
  RETURN_IF_ERROR(state->WriteMap(MapFile::kServed, bytes, sync));
  const PlacementState::RowWrite w{kParamsRow, params->SerializeAsString()};
  RETURN_IF_ERROR(state->WriteRows(std::span(&w, 1)));
  return std::make_unique<Placement>(std::move(map));
}

StatusOr<std::optional<partitioner::PartitionMap>> Placement::LeftoverMap(const PlacementState& state) {
  StatusOr<std::string> bytes = state.ReadMap(MapFile::kServed);
  if (bytes.status().code() == StatusCode::kNotFound) return std::optional<partitioner::PartitionMap>();
  RETURN_IF_ERROR(bytes.status());
  pb::PartitionMap p;
  const std::string name = state.MapName(MapFile::kServed);
  if (!p.ParseFromString(*bytes)) return Corruption(name + " is not a partition map (protobuf parse failed)");
  auto map = partitioner::PartitionMap::FromProto(std::move(p));
  if (!map.ok()) return Status(map.status().code(), name + ": " + map.status().message());
  return std::optional<partitioner::PartitionMap>(std::move(*map));
}

Status Placement::BeginMove(PlacementState* state, const partitioner::PartitionMap& before,
                            const partitioner::PartitionMap& after, const pb::MoveJournal& journal, bool sync) {
  std::string bytes;
  before.proto().SerializeToString(&bytes);
  RETURN_IF_ERROR(state->WriteMap(MapFile::kPrev, bytes, sync));
  after.proto().SerializeToString(&bytes);
  RETURN_IF_ERROR(state->WriteMap(MapFile::kNext, bytes, sync));
  const PlacementState::RowWrite w{kJournalRow, journal.SerializeAsString()};
  return state->WriteRows(std::span(&w, 1));
}

int Placement::StoreShards(uint32_t cell, uint32_t out[2]) const {
  out[0] = ShardOf(cell);
  if (!moving() || flipped()) return 1;
  out[1] = after_.ShardOf(cell);
  return out[1] == out[0] ? 1 : 2;
}

int Placement::RemovalShards(uint32_t cell, uint32_t out[2]) const {
  out[0] = ShardOf(cell);
  if (!moving() || done()) return 1;
  out[1] = flipped() ? OldShard(cell) : after_.ShardOf(cell);
  return out[1] == out[0] ? 1 : 2;
}

void Placement::CountMoved(uint64_t pages, uint64_t bytes) {
  journal_.set_pages_moved(journal_.pages_moved() + pages);
  journal_.set_bytes_moved(journal_.bytes_moved() + bytes);
}

Status Placement::Flip(PlacementState* state) {
  if (!moving()) return FailedPrecondition("placement: no move to flip");
  ASSIGN_OR_RETURN(const std::string bytes, state->ReadRow(kParamsRow));
  pb::StoreParams params;
  if (!params.ParseFromString(bytes)) return Corruption("group store: unreadable parameters");
  params.set_map_generation(journal_.generation_after());
  params.set_map_digest(journal_.digest_after());
  params.set_shards(journal_.shards_after());
  journal_.set_state(pb::MoveJournal::DROP);
  const PlacementState::RowWrite w[] = {{kParamsRow, params.SerializeAsString()},
                                        {kJournalRow, journal_.SerializeAsString()}};
  RETURN_IF_ERROR(state->WriteRows(w));
  flipped_.store(true, std::memory_order_release);
  return Status::Ok();
}

Status Placement::Rename(PlacementState* state, bool* renamed) {
  *renamed = false;
  if (!moving()) return FailedPrecondition("placement: no move to rename the map of");
  Status s = state->RenameMap(MapFile::kNext, MapFile::kServed);
  if (s.code() == StatusCode::kNotFound) return Status::Ok();
  RETURN_IF_ERROR(s);
  *renamed = true;
  return Status::Ok();
}

Status Placement::End(PlacementState* state) {
  if (!moving()) return FailedPrecondition("placement: no move to end");
  const PlacementState::RowWrite w{kJournalRow, std::nullopt};
  RETURN_IF_ERROR(state->WriteRows(std::span(&w, 1)));
  state->RemoveMap(MapFile::kPrev);
  done_.store(true, std::memory_order_release);
  return Status::Ok();
}

// ---- A store opened for reading ----------------------------------------------------------------

OpenedStore::OpenedStore() = default;
OpenedStore::~OpenedStore() = default;
OpenedStore::OpenedStore(OpenedStore&&) noexcept = default;
OpenedStore& OpenedStore::operator=(OpenedStore&&) noexcept = default;

StatusOr<OpenedStore> OpenStoreReadOnly(const StoreLayout& layout, const GivenParams& given, pb::NeardupConfig* config,
                                        double* threshold, SignerOptions* signer) {
  std::error_code ec;
  if (!std::filesystem::exists(layout.tier1() + "/CURRENT", ec)) {
    return NotFound("no store in " + layout.dir + " (expected its group store in " + layout.tier1() + ")");
  }
  OpenedStore out;
  tier1::GroupStore::Options go;
  go.path = layout.tier1();
  go.read_only = true;
  go.cache_bytes = static_cast<uint64_t>(config->tier1().cache_mib()) << 20;
  ASSIGN_OR_RETURN(out.groups, tier1::GroupStore::Open(go));
  auto params = ReadStoreParams(*out.groups);
  if (params.status().code() == StatusCode::kNotFound) {
    return FailedPrecondition("store " + layout.dir +
                              " records no parameters: it holds nothing yet, or was written by an earlier neardup "
                              "(build it again with neardup run into a new --store)");
  }
  RETURN_IF_ERROR(params.status());
  out.params = *params;
  RETURN_IF_ERROR(CheckGivenParams(out.params, ParamsFromConfig(*config, *threshold), given, layout.dir));
  ApplyParams(out.params, config, threshold, signer);
  // map.pb, or the new map of a move whose flip committed just before a crash; a move's maps.
  ASSIGN_OR_RETURN(out.placement, Placement::Load(StorePlacementState(layout, out.groups.get()), out.params));
  return out;
}

}  // namespace neardup::pipeline
