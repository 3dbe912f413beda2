// What a run writes besides the store: status lines and --out (pipeline/output.h).
#include "pipeline/output.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include <spdlog/spdlog.h>

#include "common/json_write.h"

namespace neardup::pipeline::internal {

using tier1::Classification;
using tier1::StatusAnswer;

namespace {

// The "batch" of a status line; false when it has none.
bool StatusLineBatch(std::string_view line, uint64_t* batch) {
  const size_t at = line.find("\"batch\":");
  if (at == std::string_view::npos) return false;
  *batch = std::strtoull(line.data() + at + 8, nullptr, 10);
  return true;
}

// The answer's fields the status and --out lines share: similarity to the winner, and the page it
// duplicates.
void AppendSimilarities(std::string* out, const StatusAnswer& a) {
  if (a.verified && !a.redirect) AppendJsonField(out, "similarity_to_winner", a.similarity_to_winner);
  if (a.status == StatusAnswer::kDuplicate && !a.duplicate_of.empty()) {
    *out += ",\"duplicate_of\":";
    AppendJsonString(out, a.duplicate_of);
    if (!a.redirect) AppendJsonField(out, "similarity_to_duplicate_of", a.similarity_to_duplicate_of);
  }
}

}  // namespace

void AppendStatusLine(std::string* out, std::string_view url, const StatusAnswer& a, Classification c, uint64_t batch,
                      uint64_t line, uint64_t map_version) {
  *out += "{\"url\":";
  AppendJsonString(out, url);
  *out += ",\"status\":\"";
  *out += tier1::StatusName(a.status);
  *out += "\",\"group\":" + std::to_string(a.group) + ",\"winner\":";
  AppendJsonString(out, a.winner_url);
  AppendSimilarities(out, a);
  *out += a.verified ? ",\"verified\":true" : ",\"verified\":false";
  if (a.redirect) *out += ",\"redirect\":true";
  *out += ",\"route\":\"";  // the key predates the name: it holds Tier 1's classification
  *out += tier1::ClassificationName(c);
  *out += "\",\"batch\":" + std::to_string(batch) + ",\"line\":" + std::to_string(line) +
          ",\"map_version\":" + std::to_string(map_version) + "}\n";
}

void AppendGroupLine(std::string* out, std::string_view url, const StatusAnswer& a) {
  *out += "{\"url\":";
  AppendJsonString(out, url);
  *out += ",\"group\":" + std::to_string(a.group) + ",\"winner\":";
  AppendJsonString(out, a.winner_url);
  *out += ",\"status\":\"";
  *out += tier1::StatusName(a.status);
  *out += "\"";
  AppendSimilarities(out, a);
  *out += a.status == StatusAnswer::kUnknown ? ",\"crawled\":false}\n" : "}\n";
}

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

StatusOr<std::unique_ptr<StatusFile>> StatusFile::Open(const std::string& path, bool resuming, uint64_t redo_batch) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (resuming && fs::exists(path, ec)) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) return IoError("pipeline: cannot read " + path);
    const uint64_t size = fs::file_size(path, ec);
    // A line torn by a crash goes, and so do the last committed batch's lines, which the redo
    // writes again whole.
    StatusOr<uint64_t> keep = KeepBeforeBatch(f, size, redo_batch);
    std::fclose(f);
    RETURN_IF_ERROR(keep.status());
    if (*keep < size) {
      fs::resize_file(path, *keep, ec);
      if (ec) return IoError("pipeline: cannot cut " + path + ": " + ec.message());
      spdlog::info("pipeline: cut {} bytes (the last batch's status lines, or a torn line) from {}", size - *keep, path);
    }
  }
  std::FILE* f = std::fopen(path.c_str(), resuming ? "ab" : "wb");
  if (f == nullptr) return IoError("pipeline: cannot write " + path);
  return std::unique_ptr<StatusFile>(new StatusFile(path, f));
}

StatusFile::~StatusFile() { std::fclose(f_); }

Status StatusFile::Append(std::string_view lines) {
  if (std::fwrite(lines.data(), 1, lines.size(), f_) != lines.size() || std::fflush(f_) != 0) {
    return IoError("pipeline: cannot write " + path_);
  }
  return Status::Ok();
}

Status StatusFile::Sync() {
  if (std::fflush(f_) != 0 || ::fdatasync(fileno(f_)) != 0) {
    return IoError("pipeline: cannot sync " + path_ + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

// Every page of the store as the run leaves it (every input's, not only this one's).
Status WriteGroupsFile(const std::string& path, const std::vector<std::string>& urls,
                       const std::function<Status(const std::string& url, StatusAnswer* a)>& query) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return IoError("pipeline: cannot write --out " + path + ": " + std::strerror(errno));
  Status s;
  std::string out;
  StatusAnswer a;
  for (size_t k = 0; k < urls.size() && s.ok(); ++k) {
    s = query(urls[k], &a);
    if (!s.ok()) break;
    AppendGroupLine(&out, urls[k], a);
    if (out.size() > (1 << 20)) {
      if (std::fwrite(out.data(), 1, out.size(), f) != out.size()) s = IoError("pipeline: cannot write " + path);
      out.clear();
    }
  }
  if (s.ok() && std::fwrite(out.data(), 1, out.size(), f) != out.size()) s = IoError("pipeline: cannot write " + path);
  if (std::fclose(f) != 0 && s.ok()) s = IoError("pipeline: cannot write " + path);
  return s;
}

}  // namespace neardup::pipeline::internal
