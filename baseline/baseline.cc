#include "baseline/baseline.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <unordered_map>

#include "common/json_write.h"
#include "document/crawl_signer.h"

namespace neardup::baseline {
namespace {

using Clock = std::chrono::steady_clock;

class UnionFind {
 public:
  explicit UnionFind(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0u); }
  uint32_t Find(uint32_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Union(uint32_t a, uint32_t b) {
    a = Find(a);
    b = Find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<uint32_t> parent_;
};

// Counts the cycles of the functional graph next[] (-1 = no edge).
uint64_t CountCycles(const std::vector<int64_t>& next) {
  const size_t n = next.size();
  std::vector<uint32_t> mark(n, 0);  // 0 unvisited, else the walk id that visited it
  uint64_t cycles = 0;
  uint32_t walk = 0;
  for (size_t s = 0; s < n; ++s) {
    if (mark[s] != 0) continue;
    ++walk;
    int64_t v = static_cast<int64_t>(s);
    while (v >= 0 && mark[v] == 0) {
      mark[v] = walk;
      v = next[v];
    }
    if (v >= 0 && mark[v] == walk) ++cycles;
  }
  return cycles;
}

}  // namespace

StatusOr<BaselineResult> RunBaseline(const BaselineOptions& options) {
  if (!(options.threshold > 0 && options.threshold <= 1)) {
    return InvalidArgument("threshold must be in (0, 1], got " + std::to_string(options.threshold));
  }
  RETURN_IF_ERROR(ValidateSignerOptions(options.signer));
  const auto start = Clock::now();
  const int threads = ResolveThreads(options.threads);
  BaselineResult res;
  std::unordered_map<std::string, uint32_t> ids;
  std::vector<std::vector<uint64_t>> sets;
  std::vector<int64_t> redirect;
  auto id_of = [&](const std::string& url) -> uint32_t {
    auto [it, inserted] = ids.try_emplace(url, static_cast<uint32_t>(res.pages.size()));
    if (inserted) {
      res.pages.push_back(BaselinePage{url, 0, false, false, false, 0});
      sets.emplace_back();
      redirect.push_back(-1);
    }
    return it->second;
  };
  CrawlSignerOptions sign_options;
  sign_options.signer = options.signer;
  sign_options.reader = options.reader;
  sign_options.threads = threads;
  if (options.progress) sign_options.progress_label = "baseline: read+sign";
  uint64_t seen = 0;
  if (options.max_records > 0) {
    sign_options.keep = [&](const CrawlRecord&) { return seen++ < options.max_records; };
  }
  // The last record of a URL wins: a recrawl replaces content, a redirect drops it, a gone record
  // removes the URL (as if never crawled; what redirects to it still leads to it).
  RETURN_IF_ERROR(SignCrawl(options.input, sign_options, [&](CrawlRecord& rec, PageFeatures& f) {
    const uint32_t id = id_of(rec.url);
    res.pages[id].crawled = !rec.gone;
    res.pages[id].gone = rec.gone;
    (rec.is_html ? res.html_bytes : res.text_bytes) += rec.body.size();
    if (rec.gone) {
      res.pages[id].redirect = false;
      res.pages[id].shingles = 0;
      redirect[id] = -1;
      std::vector<uint64_t>().swap(sets[id]);
    } else if (rec.is_redirect()) {
      const uint32_t target = id_of(rec.redirect_to);
      res.pages[id].redirect = true;
      res.pages[id].shingles = 0;
      redirect[id] = target;
      std::vector<uint64_t>().swap(sets[id]);
    } else {
      res.pages[id].redirect = false;
      res.pages[id].shingles = static_cast<uint32_t>(f.shingles.size());
      redirect[id] = -1;
      sets[id] = std::move(f.shingles);
    }
    return Status::Ok();
  }, &res.reader));
  res.records = res.reader.records;
  res.read_sign_seconds = std::chrono::duration<double>(Clock::now() - start).count();

  for (const auto& p : res.pages) {
    if (p.gone) ++res.gone_pages;
    if (!p.crawled) continue;
    if (p.redirect) ++res.redirect_pages;
    else {
      ++res.content_pages;
      if (p.shingles == 0) ++res.empty_pages;
    }
  }
  res.redirect_cycles = CountCycles(redirect);
  if (res.redirect_cycles > 0) spdlog::warn("baseline: {} redirect cycles (their URLs form one group each)", res.redirect_cycles);

  AllPairsOptions join_options;
  join_options.threshold = options.threshold;
  join_options.threads = threads;
  res.pairs = ExactAllPairs(std::move(sets), join_options, &res.join);

  UnionFind uf(res.pages.size());
  for (const auto& p : res.pairs) uf.Union(p.a, p.b);
  for (size_t i = 0; i < redirect.size(); ++i) {
    if (redirect[i] >= 0) uf.Union(static_cast<uint32_t>(i), static_cast<uint32_t>(redirect[i]));
  }
  // Group id: the first crawled URL of the component; count members.
  std::vector<int64_t> first(res.pages.size(), -1);
  std::vector<uint32_t> members(res.pages.size(), 0);
  for (uint32_t i = 0; i < res.pages.size(); ++i) {
    if (!res.pages[i].crawled) continue;
    const uint32_t root = uf.Find(i);
    if (first[root] < 0) {
      first[root] = i;
      ++res.groups;
    }
    res.pages[i].group = static_cast<uint32_t>(first[root]);
    if (++members[root] == 2) ++res.multi_groups;
  }
  res.total_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return res;
}

namespace {

class Writer {
 public:
  static StatusOr<std::unique_ptr<Writer>> Open(const std::string& path) {
    std::FILE* f = path == "-" ? stdout : std::fopen(path.c_str(), "wb");
    if (f == nullptr) return IoError("cannot write " + path + ": " + std::strerror(errno));
    return std::unique_ptr<Writer>(new Writer(f, path, path != "-"));
  }
  void Line(const std::string& s) { std::fwrite(s.data(), 1, s.size(), f_); }
  Status Close() {
    const bool bad = std::ferror(f_) != 0;
    const int rc = owned_ ? std::fclose(f_) : std::fflush(f_);
    f_ = nullptr;
    if (bad || rc != 0) return IoError("write to " + path_ + " failed");
    return Status::Ok();
  }
  ~Writer() {
    if (f_ != nullptr && owned_) std::fclose(f_);
  }

 private:
  Writer(std::FILE* f, std::string path, bool owned) : f_(f), path_(std::move(path)), owned_(owned) {}
  std::FILE* f_;
  std::string path_;
  bool owned_;
};

}  // namespace

Status WritePairs(const BaselineResult& r, const std::string& path) {
  ASSIGN_OR_RETURN(auto w, Writer::Open(path));
  std::string line;
  for (const auto& p : r.pairs) {
    line.assign("{\"a\":");
    AppendJsonString(&line, r.pages[p.a].url);
    line.append(",\"b\":");
    AppendJsonString(&line, r.pages[p.b].url);
    line.append(",\"similarity\":");
    AppendJsonNumber(&line, p.similarity);
    line.append("}\n");
    w->Line(line);
  }
  return w->Close();
}

Status WriteGroups(const BaselineResult& r, const std::string& path) {
  ASSIGN_OR_RETURN(auto w, Writer::Open(path));
  std::string line;
  for (const auto& p : r.pages) {
    if (!p.crawled) continue;
    line.assign("{\"url\":");
    AppendJsonString(&line, p.url);
    line.append(",\"group\":");
    line.append(std::to_string(p.group));
    line.append("}\n");
    w->Line(line);
  }
  return w->Close();
}

}  // namespace neardup::baseline
