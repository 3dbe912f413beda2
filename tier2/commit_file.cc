#include "tier2/commit_file.h"

#include <xxhash.h>

#include <cstring>

#include "common/coding.h"

namespace neardup::tier2 {
namespace {

constexpr uint32_t kCommitMagic = 0x4e444331;  // "NDC1"
// A slot: magic u32, generation u32, number u64, end u64, sequence u64, XXH3-64 of those 32 bytes
// (all little-endian), zero padding to kSlotBytes.
constexpr size_t kPayloadBytes = 32;

void EncodeSlot(const CommitFile::Record& r, uint64_t number, char* slot) {
  std::memset(slot, 0, CommitFile::kSlotBytes);
  StoreLittleEndian(slot, kCommitMagic, 4);
  StoreLittleEndian(slot + 4, r.generation, 4);
  StoreLittleEndian(slot + 8, number, 8);
  StoreLittleEndian(slot + 16, r.end, 8);
  StoreLittleEndian(slot + 24, r.sequence, 8);
  StoreLittleEndian(slot + kPayloadBytes, XXH3_64bits(slot, kPayloadBytes), 8);
}

bool DecodeSlot(const char* slot, CommitFile::Record* r, uint64_t* number) {
  if (LoadLittleEndian(slot, 4) != kCommitMagic) return false;
  if (LoadLittleEndian(slot + kPayloadBytes, 8) != XXH3_64bits(slot, kPayloadBytes)) return false;
  r->generation = static_cast<uint32_t>(LoadLittleEndian(slot + 4, 4));
  *number = LoadLittleEndian(slot + 8, 8);
  r->end = LoadLittleEndian(slot + 16, 8);
  r->sequence = LoadLittleEndian(slot + 24, 8);
  return true;
}

}  // namespace

StatusOr<std::unique_ptr<CommitFile>> CommitFile::Create(FileEnv* env, const std::string& path, const Record& first,
                                                         bool sync) {
  char slots[2 * kSlotBytes];
  EncodeSlot(first, 0, slots);
  std::memset(slots + kSlotBytes, 0, kSlotBytes);
  RETURN_IF_ERROR(WriteFileAtomically(env, path, std::string_view(slots, sizeof slots), sync));
  return Open(env, path);
}

StatusOr<std::unique_ptr<CommitFile>> CommitFile::Open(FileEnv* env, const std::string& path) {
  std::string bytes;
  RETURN_IF_ERROR(ReadWholeFile(env, path, &bytes));
  const char* slots = bytes.data();
  const size_t got = bytes.size();
  Record best;
  uint64_t best_number = 0;
  bool found = false;
  for (int i = 0; i < 2; ++i) {
    Record r;
    uint64_t number;
    // A slot must be whole and sit where its number says (a stray copy elsewhere is not trusted).
    if ((i + 1) * kSlotBytes > got || !DecodeSlot(slots + i * kSlotBytes, &r, &number) || number % 2 != uint64_t(i)) {
      continue;
    }
    if (!found || number > best_number) {
      best = r;
      best_number = number;
      found = true;
    }
  }
  if (!found) return Corruption("commit file " + path + ": neither of its two slots holds a valid commit");
  ASSIGN_OR_RETURN(std::unique_ptr<File> file, env->OpenFile(path, FileMode::kReadWrite));
  return std::unique_ptr<CommitFile>(new CommitFile(std::move(file), best, best_number));
}

CommitFile::~CommitFile() = default;

Status CommitFile::Write(const Record& r, bool sync) {
  const uint64_t number = number_ + 1;
  char slot[kSlotBytes];
  EncodeSlot(r, number, slot);
  RETURN_IF_ERROR(file_->WriteAt((number % 2) * kSlotBytes, std::string_view(slot, kSlotBytes)));
  if (sync) RETURN_IF_ERROR(file_->Sync());
  last_ = r;
  number_ = number;
  return Status::Ok();
}

}  // namespace neardup::tier2
