#include "gencrawl/crawl_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "common/json_write.h"
#include "common/rfc3339.h"
#include "document/shingle.h"
#include "document/tokenizer.h"
#include "gencrawl/page_model.h"
#include "gencrawl/renderer.h"
#include "gencrawl/sites.h"
#include "gencrawl/vocabulary.h"

namespace neardup::gencrawl {
namespace {

constexpr int64_t kTraceStartDay = DaysFromCivil(2024, 6, 3);

void AppendTimestamp(std::string* out, uint32_t offset_seconds) {
  AppendRfc3339(out, kTraceStartDay * 86400 + offset_seconds);
}

class CrawlWriter {
 public:
  CrawlWriter(const CrawlGenOptions& o, const CrawlPlan& plan)
      : o_(o),
        plan_(plan),
        vocab_(GetVocabulary()),
        urls_(vocab_, plan.sites.hosts, o.seed),
        render_(vocab_, plan.sites.hosts) {}

  Status Write(std::FILE* crawl, std::FILE* truth, CrawlGenStats* stats);

 private:
  // The Jaccard of `r`'s visible text (own_text, or rendered from pw_ when null) to its source's.
  double MeasureJaccard(const Rec& r, const std::string* own_text);

  const CrawlGenOptions& o_;
  const CrawlPlan& plan_;
  const Vocabulary& vocab_;
  const UrlSpeller urls_;
  const Renderer render_;

  // Scratch.
  PageWords pw_, src_pw_;
  std::string text_scratch_, src_text_;
  std::vector<uint64_t> hashes_;
};

double CrawlWriter::MeasureJaccard(const Rec& r, const std::string* own_text) {
  if (r.src_content == r.content) return 1.0;  // the very same text
  const int k = o_.shingle_k;
  if (own_text == nullptr) {
    text_scratch_.clear();
    render_.Text(plan_.contents[r.content], pw_, &text_scratch_);
    own_text = &text_scratch_;
  }
  hashes_.clear();
  HashWords(*own_text, &hashes_);
  const std::vector<uint64_t> own = ShingleSet(hashes_, k);
  BuildWords(vocab_, plan_.sites.hosts, k, plan_.contents[r.src_content], &src_pw_);
  src_text_.clear();
  render_.Text(plan_.contents[r.src_content], src_pw_, &src_text_);
  hashes_.clear();
  HashWords(src_text_, &hashes_);
  const std::vector<uint64_t> src = ShingleSet(hashes_, k);
  return Jaccard(own, src);
}

Status CrawlWriter::Write(std::FILE* crawl, std::FILE* truth, CrawlGenStats* stats) {
  const std::vector<Rec>& recs = plan_.recs;
  const std::vector<Host>& hosts = plan_.sites.hosts;
  std::vector<uint32_t> order(recs.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return recs[a].time != recs[b].time ? recs[a].time < recs[b].time : a < b;
  });
  CrawlGenStats st;
  st.families = plan_.families.size();
  std::string out, tout, url, page;
  out.reserve(1 << 21);
  tout.reserve(1 << 17);
  auto flush = [](std::string* buf, std::FILE* f, const char* what) -> Status {
    if (!buf->empty() && std::fwrite(buf->data(), 1, buf->size(), f) != buf->size()) {
      return IoError(std::string("writing the ") + what + " file failed: " + std::strerror(errno));
    }
    buf->clear();
    return Status::Ok();
  };
  for (uint64_t line = 1; line <= order.size(); ++line) {
    const Rec& r = recs[order[line - 1]];
    const Url& u = plan_.urls[r.url];
    url.clear();
    urls_.Append(u, &url);
    const size_t before = out.size();
    out.append("{\"url\":");
    AppendJsonString(&out, url);
    out.append(",\"fetched_at\":\"");
    AppendTimestamp(&out, r.time);
    out.append("\",\"market\":\"");
    out.append(kMarketNames[hosts[u.host].market]);
    out.append("\",\"popularity\":");
    AppendJsonNumber(&out, r.popularity);
    const std::string* own_text = nullptr;
    if (r.format == kGoneOnly) {
      out.append(",\"gone\":true");
      ++st.gone_records;
    } else if (r.format == kRedirectOnly) {
      page.clear();
      urls_.Append(plan_.urls[r.target_url], &page);
      out.append(",\"redirect_to\":");
      AppendJsonString(&out, page);
      ++st.redirect_records;
    } else {
      const Content& c = plan_.contents[r.content];
      BuildWords(vocab_, hosts, o_.shingle_k, c, &pw_);
      page.clear();
      if (r.format == kHtml) {
        render_.Html(c, pw_, hosts[u.host], u.seed, &page);
        out.append(",\"html\":");
      } else {
        render_.Text(c, pw_, &page);
        own_text = &page;
        out.append(",\"text\":");
      }
      AppendJsonString(&out, page);
      ++st.content_records;
    }
    out.append("}\n");
    st.bytes += out.size() - before;
    if (r.kind >= kRecrawlUnchanged) ++st.recrawl_records;
    if (r.time >= kTraceSeconds) {
      if (st.second_crawl_first_line == 0) st.second_crawl_first_line = line;
      if (r.kind >= kRecrawlUnchanged) ++st.second_crawl_refetches;
    }
    ++st.records;
    if (truth != nullptr) {
      tout.append("{\"url\":");
      AppendJsonString(&tout, url);
      tout.append(",\"line\":");
      AppendUint(&tout, line);
      tout.append(",\"family\":");
      if (r.family < 0) tout.append("-1"); else AppendUint(&tout, static_cast<uint64_t>(r.family));
      tout.append(",\"kind\":\"");
      tout.append(kKindNames[r.kind]);
      tout.push_back('"');
      if (r.src_content != kNone && r.content != kNone) {
        tout.append(",\"jaccard_to_source\":");
        AppendJsonNumber(&tout, MeasureJaccard(r, own_text));
      }
      tout.append("}\n");
      if (tout.size() >= (1 << 16)) RETURN_IF_ERROR(flush(&tout, truth, "truth"));
    }
    if (out.size() >= (1 << 20)) RETURN_IF_ERROR(flush(&out, crawl, "crawl"));
  }
  RETURN_IF_ERROR(flush(&out, crawl, "crawl"));
  if (truth != nullptr) RETURN_IF_ERROR(flush(&tout, truth, "truth"));
  if (std::fflush(crawl) != 0 || std::ferror(crawl)) {
    return IoError(std::string("writing the crawl file failed: ") + std::strerror(errno));
  }
  if (truth != nullptr && (std::fflush(truth) != 0 || std::ferror(truth))) {
    return IoError(std::string("writing the truth file failed: ") + std::strerror(errno));
  }
  if (stats != nullptr) *stats = st;
  return Status::Ok();
}

}  // namespace

Status WriteCrawl(const CrawlGenOptions& o, const CrawlPlan& plan, std::FILE* crawl, std::FILE* truth,
                  CrawlGenStats* stats) {
  return CrawlWriter(o, plan).Write(crawl, truth, stats);
}

}  // namespace neardup::gencrawl
