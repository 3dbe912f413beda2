// What a run writes besides the store: status lines (per batch, after its commit; cut back and
// rewritten after a crash) and --out (every page of the store, from read-only queries).
#include "pipeline/pipeline_internal.h"

namespace neardup::pipeline::internal {

namespace {

// The "batch" of a status line; false when it has none.
bool StatusLineBatch(std::string_view line, uint64_t* batch) {
  const size_t at = line.find("\"batch\":");
  if (at == std::string_view::npos) return false;
  *batch = std::strtoull(line.data() + at + 8, nullptr, 10);
  return true;
}

// The length of the file's longest prefix of whole lines none of which belongs to batch `from` or
// a later one (a line without a batch number ends the search); a torn last line (no newline yet)
// is never kept. Reads backwards in pieces.
StatusOr<uint64_t> KeepBeforeBatch(std::FILE* f, uint64_t size, uint64_t from) {
  std::string tail;  // the file's bytes [tail_start, size)
  uint64_t tail_start = size;
  std::optional<uint64_t> keep;  // lines after *keep are torn or belong to batch >= from
  for (;;) {
    if (!keep) {
      if (const size_t nl = tail.rfind('\n'); nl != std::string::npos) keep = tail_start + nl + 1;
      else if (tail_start == 0) return 0;  // not one whole line
    }
    // Examine whole lines ending at *keep, last first; a line is whole when a newline precedes it.
    while (keep && *keep > tail_start) {
      const size_t end = static_cast<size_t>(*keep - tail_start);  // tail[end - 1] is '\n'
      const size_t nl = end >= 2 ? tail.rfind('\n', end - 2) : std::string::npos;
      if (nl == std::string::npos && tail_start > 0) break;  // its start is further back
      const size_t begin = nl == std::string::npos ? 0 : nl + 1;
      uint64_t batch = 0;
      if (!StatusLineBatch(std::string_view(tail).substr(begin, end - begin), &batch) || batch < from) return *keep;
      keep = tail_start + begin;
    }
    if (keep == 0) return 0;
    const uint64_t step = std::max<uint64_t>(1 << 20, tail.size());
    const uint64_t new_start = tail_start > step ? tail_start - step : 0;
    std::string piece(static_cast<size_t>(tail_start - new_start), '\0');
    if (std::fseek(f, static_cast<long>(new_start), SEEK_SET) != 0 ||
        std::fread(piece.data(), 1, piece.size(), f) != piece.size()) {
      return IoError("cannot read the status file");
    }
    tail.insert(0, piece);
    tail_start = new_start;
  }
}

}  // namespace


Status Pipeline::SyncStatusFile() {
  if (status_file_ == nullptr) return Status::Ok();
  if (std::fflush(status_file_) != 0 || ::fdatasync(fileno(status_file_)) != 0) {
    return IoError("pipeline: cannot sync " + o_.status_out + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

Status Pipeline::WriteStatus(const Batch& b, const std::vector<Classification>& classes) {
  const auto t0 = SteadyClock::now();
  const double cpu0 = ThreadCpuSeconds();
  std::string out;
  StatusAnswer a;
  for (size_t i = 0; i < b.records.size(); ++i) {
    if (classes[i] == Classification::kSuperseded) continue;
    RETURN_IF_ERROR(tier1_->QueryAndRecord(b.records[i].url, &a));
    if (status_file_ == nullptr) continue;
    out += "{\"url\":";
    AppendJsonString(&out, b.records[i].url);
    out += ",\"status\":\"";
    out += StatusName(a.status);
    out += "\",\"group\":" + std::to_string(a.group) + ",\"winner\":";
    AppendJsonString(&out, a.winner_url);
    if (a.verified && !a.redirect) AppendJsonField(&out, "similarity_to_winner", a.similarity_to_winner);
    if (a.status == StatusAnswer::kDuplicate && !a.duplicate_of.empty()) {
      out += ",\"duplicate_of\":";
      AppendJsonString(&out, a.duplicate_of);
      if (!a.redirect) AppendJsonField(&out, "similarity_to_duplicate_of", a.similarity_to_duplicate_of);
    }
    out += a.verified ? ",\"verified\":true" : ",\"verified\":false";
    if (a.redirect) out += ",\"redirect\":true";
    out += ",\"route\":\"";  // the key predates the name: it holds Tier 1's classification
    out += ClassificationName(classes[i]);
    out += "\",\"batch\":" + std::to_string(b.number) + ",\"line\":" + std::to_string(b.records[i].line) +
           ",\"map_version\":" + std::to_string(sum_.map_version) + "}\n";
  }
  if (status_file_ != nullptr && !out.empty()) {
    RETURN_IF_ERROR(store_->rows().WaitForWrites());  // the lines acknowledge the batch's commit
    if (std::fwrite(out.data(), 1, out.size(), status_file_) != out.size() || std::fflush(status_file_) != 0) {
      return IoError("pipeline: cannot write " + o_.status_out);
    }
  }
  // Losers of groups whose winner changed: verified now, so that status queries find them current.
  RETURN_IF_ERROR(tier1_->Reverify());
  std::vector<RepairReport> repairs;
  RETURN_IF_ERROR(tier1_->Flush(&repairs));
  for (const RepairReport& r : repairs) {
    ++sum_.repairs;
    if (r.components > 1) sum_.repair_splits += r.components - 1;
  }
  sum_.query_seconds += Since(t0);
  sum_.query_cpu_seconds += ThreadCpuSeconds() - cpu0;
  return Status::Ok();
}


Status Pipeline::OpenStatusFile() {
  std::error_code ec;
  if (resuming_ && fs::exists(o_.status_out, ec)) {
    std::FILE* f = std::fopen(o_.status_out.c_str(), "rb");
    if (f == nullptr) return IoError("pipeline: cannot read " + o_.status_out);
    const uint64_t size = fs::file_size(o_.status_out, ec);
    // A line torn by a crash goes, and so do the last committed batch's lines, which Redo writes
    // again whole.
    StatusOr<uint64_t> keep = KeepBeforeBatch(f, size, progress_.batches_committed());
    std::fclose(f);
    RETURN_IF_ERROR(keep.status());
    if (*keep < size) {
      fs::resize_file(o_.status_out, *keep, ec);
      if (ec) return IoError("pipeline: cannot cut " + o_.status_out + ": " + ec.message());
      spdlog::info("pipeline: cut {} bytes (the last batch's status lines, or a torn line) from {}", size - *keep,
                   o_.status_out);
    }
  }
  status_file_ = std::fopen(o_.status_out.c_str(), resuming_ ? "ab" : "wb");
  if (status_file_ == nullptr) return IoError("pipeline: cannot write " + o_.status_out);
  return Status::Ok();
}

// Every page of the store as the run leaves it (every input's, not only this one's), from
// read-only queries: writing it changes nothing in the store.
Status Pipeline::WriteGroups() {
  std::FILE* f = std::fopen(o_.groups_out.c_str(), "wb");
  if (f == nullptr) return IoError("pipeline: cannot write --out " + o_.groups_out + ": " + std::strerror(errno));
  std::vector<std::string> urls;
  Status s = store_->rows().ScanFamily(store_->page_family(), [&](std::string_view url, std::string_view, std::string_view) {
    urls.emplace_back(url);
    return true;
  });
  std::string out;
  StatusAnswer a;
  for (size_t k = 0; k < urls.size() && s.ok(); ++k) {
    const std::string& url = urls[k];
    s = tier1_->Query(url, nullptr, &a);
    if (!s.ok()) break;
    out += "{\"url\":";
    AppendJsonString(&out, url);
    out += ",\"group\":" + std::to_string(a.group) + ",\"winner\":";
    AppendJsonString(&out, a.winner_url);
    out += ",\"status\":\"";
    out += StatusName(a.status);
    out += "\"";
    if (a.verified && !a.redirect) AppendJsonField(&out, "similarity_to_winner", a.similarity_to_winner);
    if (a.status == StatusAnswer::kDuplicate && !a.duplicate_of.empty()) {
      out += ",\"duplicate_of\":";
      AppendJsonString(&out, a.duplicate_of);
      if (!a.redirect) AppendJsonField(&out, "similarity_to_duplicate_of", a.similarity_to_duplicate_of);
    }
    out += a.status == StatusAnswer::kUnknown ? ",\"crawled\":false}\n" : "}\n";
    if (out.size() > (1 << 20)) {
      if (std::fwrite(out.data(), 1, out.size(), f) != out.size()) s = IoError("pipeline: cannot write " + o_.groups_out);
      out.clear();
    }
  }
  if (s.ok() && std::fwrite(out.data(), 1, out.size(), f) != out.size()) s = IoError("pipeline: cannot write " + o_.groups_out);
  if (std::fclose(f) != 0 && s.ok()) s = IoError("pipeline: cannot write " + o_.groups_out);
  return s;
}

}  // namespace neardup::pipeline::internal
