#include "experiments/eval.h"

#include <fmt/format.h>
#include <simdjson.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_set>

#include "baseline/baseline.h"
#include "cluster/api/service_client.h"
#include "common/json_write.h"
#include "document/crawl_reader.h"

namespace neardup::experiments {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string Percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%%", share * 100);
  return buf;
}

Status WriteFile(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return IoError("eval: cannot write " + tmp);
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) return IoError("eval: cannot write " + tmp);
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return IoError("eval: cannot rename " + tmp + " to " + path + ": " + ec.message());
  return Status::Ok();
}

// The good records in order, for a replay through a service: each one's URL and the input's
// bytes up to the end of its line.
struct RecordIndex {
  std::vector<std::string> urls;
  std::vector<uint64_t> ends;
};

// Counts the good records, and notes each URL's market (its last record's); fills `index` when given.
StatusOr<uint64_t> CountRecords(const pipeline::PipelineOptions& run, Markets* markets, RecordIndex* index) {
  CrawlReaderOptions ro = run.reader;
  ro.quiet_bad_lines = true;  // the first run reports them
  ASSIGN_OR_RETURN(auto reader, CrawlReader::Open(run.input, ro));
  CrawlRecord r;
  while (reader->Next(&r)) {
    if (!r.market.empty() || markets->count(r.url)) (*markets)[r.url] = r.market;
    if (index != nullptr) {
      index->urls.push_back(r.url);
      index->ends.push_back(r.end_offset);
    }
  }
  RETURN_IF_ERROR(reader->status());
  return reader->stats().records;
}

// A status reply of the service as eval's answer and history; false for a page it does not hold
// (status unknown: gone, or never sent). *unverified: a content page answered duplicate without a
// verification (a signature the shards did not give).
StatusOr<bool> ParseStatusReply(const std::string& url, const std::string& json, PageAnswer* a, PageHistory* h,
                                bool* unverified) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc) != simdjson::SUCCESS) return Corruption("status of " + url + ": not JSON: " + json);
  std::string_view status;
  if (doc["status"].get_string().get(status) != simdjson::SUCCESS) {
    return Corruption("status of " + url + ": no \"status\": " + json);
  }
  if (status == "unknown") return false;
  *a = PageAnswer();
  a->status = std::string(status);
  simdjson::dom::element g;
  if (doc["group"].get(g) != simdjson::SUCCESS) return Corruption("status of " + url + ": no \"group\": " + json);
  a->group = simdjson::minify(g);
  // As `neardup run --out` writes them: a similarity only where one was computed (not for a
  // redirect), duplicate_of only for a duplicate.
  bool verified = false, redirect = false;
  if (doc["verified"].get_bool().get(verified) != simdjson::SUCCESS) verified = false;
  if (doc["redirect"].get_bool().get(redirect) != simdjson::SUCCESS) redirect = false;
  *unverified = status == "duplicate" && !verified && !redirect;
  double sim;
  if (verified && !redirect && doc["similarity_to_winner"].get_double().get(sim) == simdjson::SUCCESS) {
    a->similarity_to_winner = sim;
  }
  std::string_view text;
  if (status == "duplicate" && doc["duplicate_of"].get_string().get(text) == simdjson::SUCCESS && !text.empty()) {
    a->duplicate_of = std::string(text);
    if (!redirect && doc["similarity_to_duplicate_of"].get_double().get(sim) == simdjson::SUCCESS) {
      a->similarity_to_duplicate_of = sim;
    }
  }
  h->route = doc["route"].get_string().get(text) == simdjson::SUCCESS ? std::string(text) : std::string();
  return true;
}

// The replay through a running service (EvalOptions::server): what has been sent so far, and the
// answers read back.
class ServiceReplay {
 public:
  // Connects, and checks that the service has Tier 2 shards (its /metrics' neardup_shard_up
  // samples: *shards; a server just started is given 30 s to name them) and has taken no record
  // yet.
  static StatusOr<std::unique_ptr<ServiceReplay>> Open(const EvalOptions& o, uint32_t* shards) {
    cluster::ServiceClientOptions so;
    so.server = o.server;
    so.token = o.server_token;
    so.ca_file = o.server_ca_file;
    so.source = o.run.input;
    so.batch_records = 1000;
    ASSIGN_OR_RETURN(std::unique_ptr<cluster::ServiceClient> c, cluster::ServiceClient::Create(so));
    // A server just started names its shards once its batch loop has opened them: up to 30 s.
    // Until every shard named is up the count is not taken: a call that failed before the set
    // opened names that shard (and those below it) on its own.
    std::map<std::string, double> m;
    *shards = 0;
    for (int tries = 0; *shards == 0 && tries < 300; ++tries) {
      if (tries > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      ASSIGN_OR_RETURN(m, c->Metrics());
      uint32_t named = 0, up = 0;
      for (const auto& [name, value] : m) {
        if (name.rfind("neardup_shard_up{", 0) != 0) continue;
        ++named;
        up += value == 1;
      }
      if (named > 0 && up == named) *shards = named;
    }
    if (*shards == 0) return FailedPrecondition("eval --server: the service's /metrics names no Tier 2 shard, or not all of them up, after 30 s");
    const auto records = m.find("neardup_ingest_records_total");
    if (records != m.end() && records->second > 0) {
      return FailedPrecondition("eval --server: the service has taken " +
                                std::to_string(static_cast<uint64_t>(records->second)) +
                                " records already; it must start on an empty store");
    }
    auto r = std::unique_ptr<ServiceReplay>(new ServiceReplay(o, std::move(c)));
    if (IsWarcPath(o.run.input)) {
      CrawlReaderOptions ro = o.run.reader;
      ro.quiet_bad_lines = true;  // CountRecords reported them
      ASSIGN_OR_RETURN(r->warc_, CrawlReader::Open(o.run.input, ro));
    } else {
      r->input_.open(o.run.input, std::ios::binary);
      if (!r->input_) return IoError("eval: cannot read " + o.run.input);
    }
    return r;
  }

  // Sends the good records [from, to) of `index` through the ingest API and waits until the
  // service has decided them. JSON Lines: the input's lines up to byte index.ends[to - 1], as
  // they are; WARC: the records, as the JSON Lines records they read as.
  Status Send(const RecordIndex& index, uint64_t from, uint64_t to) {
    if (warc_ != nullptr) {
      CrawlRecord r;
      for (uint64_t k = from; k < to; ++k) {
        if (!warc_->Next(&r)) {
          RETURN_IF_ERROR(warc_->status());
          return IoError("eval: " + o_.run.input + " ended before its record " + std::to_string(to));
        }
        RETURN_IF_ERROR(client_->AddLine(FormatJsonLine(r), r.line));
      }
    } else {
      const uint64_t end = index.ends[to - 1];
      std::string line;
      while (sent_ < end && std::getline(input_, line)) {
        sent_ += line.size() + 1;
        ++line_;
        if (line.empty()) continue;
        RETURN_IF_ERROR(client_->AddLine(std::move(line), line_));
      }
      if (sent_ < end) return IoError("eval: " + o_.run.input + " ended before byte " + std::to_string(end));
    }
    RETURN_IF_ERROR(client_->FlushLines());
    for (uint64_t k = from; k < to; ++k) {
      if (seen_.insert(index.urls[k]).second) urls_.push_back(index.urls[k]);
      else histories_[index.urls[k]].recrawled = true;
    }
    return client_->AwaitSettled(std::chrono::seconds(o_.server_settle_seconds));
  }

  // The answer of every URL sent so far. A loser whose verification a repair reset is verified
  // when asked, from the signatures of the shards: those of the last batch may not be stored yet
  // a moment after it committed, and the answer then comes unverified. Those are asked again,
  // for up to 10 s.
  StatusOr<Answers> ReadAnswers() {
    constexpr int kAsks = 200;  // 50 ms apart
    Answers answers;
    std::vector<size_t> ask(urls_.size());
    for (size_t k = 0; k < ask.size(); ++k) ask[k] = k;
    for (int asked = 1; !ask.empty(); ++asked) {
      std::vector<std::string> urls;
      for (size_t k : ask) urls.push_back(urls_[k]);
      ASSIGN_OR_RETURN(std::vector<std::string> replies, client_->Statuses(urls, o_.server_connections));
      std::vector<size_t> again;
      for (size_t j = 0; j < ask.size(); ++j) {
        const std::string& url = urls_[ask[j]];
        PageAnswer a;
        bool unverified = false;
        ASSIGN_OR_RETURN(const bool held, ParseStatusReply(url, replies[j], &a, &histories_[url], &unverified));
        if (unverified) again.push_back(ask[j]);
        if (held) answers.insert_or_assign(url, std::move(a));
      }
      if (again.empty()) break;
      if (asked == kAsks) {
        spdlog::warn("eval: {} answers stay unverified (a shard that does not answer?)", again.size());
        break;
      }
      if (asked == 1) spdlog::info("eval: {} duplicates answered unverified: asked again", again.size());
      ask = std::move(again);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return answers;
  }

  // The service's Tier 1 counters now, from its /metrics: the batch loop's counts over the
  // service's life (changed pages, the fast path's, repairs) and the store's (verifications,
  // rejections). Corruption if one is missing.
  struct Counters {
    uint64_t changed = 0, fast_path = 0, repairs = 0, verifications = 0, rejections = 0;
  };
  StatusOr<Counters> ReadCounters() {
    ASSIGN_OR_RETURN(auto m, client_->Metrics());
    Counters c;
    for (auto [name, field] : {std::pair{"neardup_changed_pages_total", &c.changed},
                               {"neardup_fast_path_pages_total", &c.fast_path},
                               {"neardup_repairs_total", &c.repairs},
                               {"neardup_verifications_total", &c.verifications},
                               {"neardup_rejections_total", &c.rejections}}) {
      const auto it = m.find(name);
      if (it == m.end()) return Corruption(std::string("eval --server: the service's /metrics has no ") + name);
      *field = static_cast<uint64_t>(it->second);
    }
    return c;
  }

  const Histories& histories() const { return histories_; }

 private:
  ServiceReplay(const EvalOptions& o, std::unique_ptr<cluster::ServiceClient> c) : o_(o), client_(std::move(c)) {}

  const EvalOptions& o_;
  std::unique_ptr<cluster::ServiceClient> client_;
  std::ifstream input_;                    // JSON Lines input
  std::unique_ptr<CrawlReader> warc_;      // WARC input
  uint64_t sent_ = 0, line_ = 0;           // input bytes and lines sent so far (JSON Lines)
  std::vector<std::string> urls_;          // the URLs sent so far, each once
  std::unordered_set<std::string> seen_;
  Histories histories_;
};

}  // namespace

const char* WrongCauseName(WrongCause c) {
  switch (c) {
    case WrongCause::kTransitiveChaining: return "transitive_chaining";
    case WrongCause::kGroupSplitting: return "group_splitting";
    case WrongCause::kFastPath: return "fast_path";
    case WrongCause::kRouting: return "routing";
    case WrongCause::kStaleContent: return "stale_content";
    case WrongCause::kVerificationRejection: return "verification_rejection";
  }
  return "?";
}

WrongPairs ExplainWrongPairs(const Answers& answers, const Grouping& truth, const std::vector<TruePair>& pairs,
                             const Histories& histories, double threshold, bool rho_routing, size_t examples) {
  WrongPairs w;
  // Pages both sides hold, by run group and by baseline group: group -> (other side's group -> pages).
  using Parts = std::map<std::string, std::vector<std::string_view>>;
  std::map<std::string, Parts> by_run, by_truth;
  for (const auto& [url, a] : answers) {
    auto t = truth.find(url);
    if (t == truth.end()) continue;
    by_run[a.group][t->second].push_back(url);
    by_truth[t->second][a.group].push_back(url);
  }
  std::unordered_map<std::string_view, std::vector<std::pair<std::string_view, double>>> partners;
  for (const TruePair& p : pairs) {
    if (answers.count(p.a) == 0 || answers.count(p.b) == 0) continue;
    partners[p.a].emplace_back(p.b, p.similarity);
    partners[p.b].emplace_back(p.a, p.similarity);
  }
  auto route_is = [&](std::string_view url, const char* route) {
    auto h = histories.find(std::string(url));
    return h != histories.end() && h->second.route == route;
  };
  auto recrawled = [&](std::string_view url) {
    auto h = histories.find(std::string(url));
    return h != histories.end() && h->second.recrawled && h->second.route != "unchanged";
  };
  auto rejected = [&](std::string_view url) {
    const PageAnswer& a = answers.at(std::string(url));
    return a.status != "winner" && a.similarity_to_winner && *a.similarity_to_winner < threshold - 5e-7;
  };
  auto add = [&](WrongCause cause, bool extra, uint64_t n, std::string_view a, std::string_view b,
                 std::optional<double> sim) {
    WrongPairCause& c = w.causes[static_cast<size_t>(cause)];
    (extra ? c.extra : c.missed) += n;
    (extra ? w.extra : w.missed) += n;
    if (c.examples.size() < examples) c.examples.push_back({std::string(a), std::string(b), extra, sim});
  };
  // Extra pairs: parts of a run group that the baseline puts apart.
  for (const auto& [group, parts] : by_run) {
    for (auto i = parts.begin(); i != parts.end(); ++i) {
      for (auto j = std::next(i); j != parts.end(); ++j) {
        const auto& small = i->second.size() <= j->second.size() ? i->second : j->second;
        const uint64_t n = static_cast<uint64_t>(i->second.size()) * j->second.size();
        WrongCause cause = WrongCause::kGroupSplitting;
        if (std::any_of(small.begin(), small.end(), [&](std::string_view u) { return route_is(u, "fast_path"); })) {
          cause = WrongCause::kFastPath;
        } else if (std::any_of(small.begin(), small.end(), recrawled)) {
          cause = WrongCause::kStaleContent;
        }
        add(cause, true, n, i->second.front(), j->second.front(), std::nullopt);
      }
    }
  }
  // Missed pairs: parts of a baseline group that the run puts apart.
  for (const auto& [group, parts] : by_truth) {
    for (auto i = parts.begin(); i != parts.end(); ++i) {
      for (auto j = std::next(i); j != parts.end(); ++j) {
        const uint64_t n = static_cast<uint64_t>(i->second.size()) * j->second.size();
        const std::string& other = j->first;  // the run group of part j
        std::string_view a, b;
        double sim = 0;
        for (std::string_view u : i->second) {
          auto it = partners.find(u);
          if (it == partners.end()) continue;
          for (const auto& [v, s] : it->second) {
            if (answers.at(std::string(v)).group == other) {
              a = u, b = v, sim = s;
              break;
            }
          }
          if (!a.empty()) break;
        }
        if (a.empty()) {
          add(WrongCause::kTransitiveChaining, false, n, i->second.front(), j->second.front(), std::nullopt);
          continue;
        }
        WrongCause cause = WrongCause::kStaleContent;
        if (route_is(a, "fast_path") || route_is(b, "fast_path")) cause = WrongCause::kFastPath;
        else if (rho_routing) cause = WrongCause::kRouting;
        else if (rejected(a) || rejected(b)) cause = WrongCause::kVerificationRejection;
        add(cause, false, n, a, b, sim);
      }
    }
  }
  return w;
}

StatusOr<std::vector<double>> ParseMilestones(const std::string& text) {
  std::vector<double> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = text.find(',', at);
    std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    at = comma == std::string::npos ? text.size() + 1 : comma + 1;
    const bool percent = !item.empty() && item.back() == '%';
    if (percent) item.pop_back();
    char* end = nullptr;
    const double v = item.empty() ? NAN : std::strtod(item.c_str(), &end);
    const double share = percent ? v / 100 : v;
    if (item.empty() || end == nullptr || *end != '\0' || !(share > 0) || share > 1 ||
        (!out.empty() && share <= out.back())) {
      return InvalidArgument("--milestones: '" + text.substr(0, 200) +
                             "': each item must be a share in (0, 1] or a percentage in (0%, 100%], increasing; bad "
                             "item " + std::to_string(out.size() + 1));
    }
    out.push_back(share);
  }
  return out;
}

namespace {

// The exact answer at one milestone (the baseline over its records).
struct MilestoneTruth {
  Grouping groups;
  std::vector<TruePair> pairs;
  uint64_t pages = 0;
  double seconds = 0;
};

// One RunEval: its options and result, the input's markets and records, the milestones, the
// work done for the rate and ETA.
class EvalRun {
 public:
  EvalRun(const EvalOptions& o, EvalResult* res) : o_(o), res_(*res), served_(!o.server.empty()) {}

  // The output folders made, the service opened (served), the input counted, the milestones
  // set. InvalidArgument for an input without good records; the rest as RunEval.
  Status Prepare();
  size_t milestones() const { return at_.size(); }
  // Milestone i: the truth, then the service's point or each shard count's run; each point
  // written as it comes. Sets res.stopped when o.stop asks.
  Status Milestone(size_t i);
  // The run's leftovers removed (the groups files; the stores, unless stopped).
  void Clean();

 private:
  StatusOr<MilestoneTruth> Truth(size_t i);
  // A step's point: what it measured, scored against the milestone's truth.
  EvalPoint Point(size_t i, const MilestoneTruth& truth, uint32_t shards, double run_seconds, const Answers& answers,
                  const Histories& histories);
  // The records up to milestone i through the ingest API; the answers once all are decided.
  Status ServedPoint(size_t i, const MilestoneTruth& truth);
  // A run of the pipeline over the records up to milestone i with `shards` shards.
  Status EmbeddedPoint(size_t i, uint32_t shards, const MilestoneTruth& truth);

  const EvalOptions& o_;
  EvalResult& res_;
  const bool served_;
  std::string stores_;
  std::unique_ptr<ServiceReplay> service_;
  Markets markets_;
  RecordIndex index_;
  std::vector<uint64_t> at_;  // each milestone's records
  double total_work_ = 0, done_work_ = 0;
  Clock::time_point start_;
  ServiceReplay::Counters served_before_;  // the service's counters at the last milestone
};

Status EvalRun::Prepare() {
  std::error_code ec;
  fs::create_directories(o_.out_dir, ec);
  if (ec) return IoError("eval: cannot create " + o_.out_dir + ": " + ec.message());
  stores_ = (fs::path(o_.out_dir) / "stores").string();
  fs::remove_all(stores_, ec);
  fs::create_directories(stores_, ec);
  if (ec) return IoError("eval: cannot create " + stores_ + ": " + ec.message());
  res_.shards = o_.shards;
  if (served_) {
    uint32_t shards = 0;
    ASSIGN_OR_RETURN(service_, ServiceReplay::Open(o_, &shards));
    res_.shards = {shards};
  }
  ASSIGN_OR_RETURN(res_.input_records, CountRecords(o_.run, &markets_, served_ ? &index_ : nullptr));
  if (res_.input_records == 0) return InvalidArgument("eval: " + o_.run.input + " holds no good records");
  for (double m : o_.milestones) {
    at_.push_back(std::min<uint64_t>(res_.input_records,
                                     static_cast<uint64_t>(std::ceil(m * static_cast<double>(res_.input_records)))));
  }
  // Work, for the rate and ETA: records replayed by the runs plus records read by the baselines.
  total_work_ = static_cast<double>(res_.input_records) * static_cast<double>(res_.shards.size());
  double baseline_work = 0;
  for (uint64_t n : at_) baseline_work += static_cast<double>(n);
  total_work_ += baseline_work;
  start_ = Clock::now();
  spdlog::info("eval: {} records; {} milestones x {} shard counts{}", res_.input_records, at_.size(),
               res_.shards.size(), served_ ? " (through the service at " + o_.server + ")" : "");
  return Status::Ok();
}

StatusOr<MilestoneTruth> EvalRun::Truth(size_t i) {
  baseline::BaselineOptions bo;
  bo.input = o_.run.input;
  bo.threshold = o_.run.threshold;
  bo.signer = o_.run.signer;
  bo.reader = o_.run.reader;
  bo.reader.quiet_bad_lines = true;
  bo.threads = o_.run.threads;
  bo.progress = false;
  bo.max_records = at_[i];
  const auto b0 = Clock::now();
  ASSIGN_OR_RETURN(baseline::BaselineResult base, baseline::RunBaseline(bo));
  MilestoneTruth truth;
  truth.seconds = Since(b0);
  for (const baseline::BaselinePage& p : base.pages) {
    if (!p.crawled) continue;
    truth.groups.emplace(p.url, std::to_string(p.group));
    ++truth.pages;
  }
  truth.pairs.reserve(base.pairs.size());
  for (const baseline::SimilarPair& p : base.pairs) {
    truth.pairs.push_back({base.pages[p.a].url, base.pages[p.b].url, p.similarity});
  }
  done_work_ += static_cast<double>(at_[i]);
  return truth;
}

EvalPoint EvalRun::Point(size_t i, const MilestoneTruth& truth, uint32_t shards, double run_seconds,
                         const Answers& answers, const Histories& histories) {
  EvalPoint pt;
  pt.milestone = o_.milestones[i];
  pt.records = at_[i];
  pt.shards = shards;
  pt.run_seconds = run_seconds;
  pt.baseline_seconds = truth.seconds;
  pt.baseline_pages = truth.pages;
  pt.accuracy = CompareGroupings(GroupingOf(answers), truth.groups);
  pt.view = ComputeCrawlerView(answers, truth.pairs, o_.run.threshold, &markets_);
  pt.wrong = ExplainWrongPairs(answers, truth.groups, truth.pairs, histories, o_.run.threshold,
                               o_.run.config.pipeline().routing() == "rho");
  done_work_ += static_cast<double>(at_[i] - (i == 0 ? 0 : at_[i - 1]));
  return pt;
}

Status EvalRun::Milestone(size_t i) {
  ASSIGN_OR_RETURN(const MilestoneTruth truth, Truth(i));
  if (served_) {
    if (o_.stop && o_.stop()) {
      res_.stopped = true;
      return Status::Ok();
    }
    return ServedPoint(i, truth);
  }
  for (uint32_t shards : o_.shards) {
    if (o_.stop && o_.stop()) {
      res_.stopped = true;
      break;
    }
    RETURN_IF_ERROR(EmbeddedPoint(i, shards, truth));
  }
  return Status::Ok();
}

Status EvalRun::ServedPoint(size_t i, const MilestoneTruth& truth) {
  const auto r0 = Clock::now();
  RETURN_IF_ERROR(service_->Send(index_, i == 0 ? 0 : at_[i - 1], at_[i]));
  const double run_seconds = Since(r0);
  ASSIGN_OR_RETURN(const ServiceReplay::Counters now, service_->ReadCounters());
  ASSIGN_OR_RETURN(Answers answers, service_->ReadAnswers());
  EvalPoint& pt = res_.points.emplace_back(Point(i, truth, res_.shards[0], run_seconds, answers, service_->histories()));
  // As an embedded milestone's run counts them: the records since the last milestone, and
  // the store's verifications over its life.
  pt.changed = now.changed - served_before_.changed;
  pt.fast_path = now.fast_path - served_before_.fast_path;
  pt.repairs = now.repairs - served_before_.repairs;
  pt.verifications = now.verifications;
  pt.rejections = now.rejections;
  served_before_ = now;
  spdlog::info("eval: {} ({} records) through the service, {} shards: REP {:.4f}% RER {:.4f}%, drop precision "
               "{:.6f}, redundancy {:.4f}%; sent and decided in {:.1f} s, {} answers read",
               Percent(pt.milestone), pt.records, pt.shards, 100 * pt.accuracy.rep(), 100 * pt.accuracy.rer(),
               pt.view.drop_precision(), 100 * pt.view.redundancy(), pt.run_seconds, answers.size());
  return WriteEvalResults(res_, o_);
}

Status EvalRun::EmbeddedPoint(size_t i, uint32_t shards, const MilestoneTruth& truth) {
  pipeline::PipelineOptions run = o_.run;
  run.store = (fs::path(stores_) / ("shards-" + std::to_string(shards))).string();
  run.groups_out = (fs::path(o_.out_dir) / ("groups-" + std::to_string(shards) + ".jsonl")).string();
  // Each record's classification, for the causes of wrong pairs (appended milestone after milestone).
  run.status_out = (fs::path(stores_) / ("status-" + std::to_string(shards) + ".jsonl")).string();
  run.max_records = at_[i];
  run.progress = false;
  run.config.mutable_pipeline()->set_shards(shards);
  run.given["shards"] = "--shards";
  const auto r0 = Clock::now();
  ASSIGN_OR_RETURN(pipeline::PipelineSummary sum, pipeline::RunPipeline(run));
  const double run_seconds = Since(r0);
  ASSIGN_OR_RETURN(Answers answers, ReadAnswersJsonl(run.groups_out));
  ASSIGN_OR_RETURN(Histories histories, ReadHistories(run.status_out));
  EvalPoint& pt = res_.points.emplace_back(Point(i, truth, shards, run_seconds, answers, histories));
  pt.changed = sum.changed;
  pt.fast_path = sum.fast_path;
  pt.verifications = sum.verifications;
  pt.rejections = sum.rejections;
  pt.repairs = sum.repairs;
  const double elapsed = Since(start_);
  const double rate = elapsed > 0 ? done_work_ / elapsed : 0;
  spdlog::info("eval: {} ({} records), {} shards: REP {:.4f}% RER {:.4f}%, drop precision {:.6f}, redundancy "
               "{:.4f}% ({:.4f}% in one market); {:.0f} records/s, ETA {:.0f} s",
               Percent(pt.milestone), pt.records, shards, 100 * pt.accuracy.rep(), 100 * pt.accuracy.rer(),
               pt.view.drop_precision(), 100 * pt.view.redundancy(), 100 * pt.view.same_market_redundancy(), rate,
               rate > 0 ? (total_work_ - done_work_) / rate : 0.0);
  return WriteEvalResults(res_, o_);
}

void EvalRun::Clean() {
  std::error_code ec;
  for (uint32_t shards : o_.shards) {
    fs::remove((fs::path(o_.out_dir) / ("groups-" + std::to_string(shards) + ".jsonl")), ec);
  }
  if (!res_.stopped) fs::remove_all(stores_, ec);
}

}  // namespace

StatusOr<EvalResult> RunEval(const EvalOptions& o) {
  if (o.milestones.empty()) return InvalidArgument("eval: no milestones");
  const bool served = !o.server.empty();
  if (!served && o.shards.empty()) return InvalidArgument("eval: no shard counts");
  if (served && !o.shards.empty()) {
    return InvalidArgument("eval: no shard counts with a server (the service's own are evaluated)");
  }
  EvalResult res;
  EvalRun run(o, &res);
  RETURN_IF_ERROR(run.Prepare());
  for (size_t i = 0; i < run.milestones() && !res.stopped; ++i) RETURN_IF_ERROR(run.Milestone(i));
  run.Clean();
  RETURN_IF_ERROR(WriteEvalResults(res, o));
  return res;
}

std::string FormatEvalTable(const EvalResult& r, const std::vector<uint32_t>& shards) {
  std::string out = "milestone  records   ";
  for (uint32_t p : shards) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " REP,%-4u  RER,%-4u ", p, p);
    out += buf;
  }
  out += "\n";
  for (size_t k = 0; k < r.points.size();) {
    const double m = r.points[k].milestone;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%-9s  %-9llu ", Percent(m).c_str(), (unsigned long long)r.points[k].records);
    out += buf;
    for (uint32_t p : shards) {
      if (k < r.points.size() && r.points[k].milestone == m && r.points[k].shards == p) {
        std::snprintf(buf, sizeof buf, " %7.3f%%  %7.3f%% ", 100 * r.points[k].accuracy.rep(),
                      100 * r.points[k].accuracy.rer());
        ++k;
      } else {
        std::snprintf(buf, sizeof buf, " %8s  %8s ", "-", "-");
      }
      out += buf;
    }
    out += "\n";
    while (k < r.points.size() && r.points[k].milestone == m) ++k;  // (shards not asked for)
  }
  return out;
}

std::string FormatWrongPairs(const EvalResult& r) {
  std::string out;
  for (const EvalPoint& p : r.points) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "wrong pairs at %s, %u shards: %llu extra (REP), %llu missed (RER)\n",
                  Percent(p.milestone).c_str(), p.shards, (unsigned long long)p.wrong.extra,
                  (unsigned long long)p.wrong.missed);
    out += buf;
    for (size_t c = 0; c < kWrongCauses; ++c) {
      const WrongPairCause& wc = p.wrong.causes[c];
      std::snprintf(buf, sizeof buf, "  %-24s %10llu extra %10llu missed", WrongCauseName(static_cast<WrongCause>(c)),
                    (unsigned long long)wc.extra, (unsigned long long)wc.missed);
      out += buf;
      for (const WrongPairExample& ex : wc.examples) {
        out += "\n      " + ex.a + "  " + ex.b;
        if (ex.similarity) {
          std::snprintf(buf, sizeof buf, "  (similarity %.4f)", *ex.similarity);
          out += buf;
        } else {
          out += "  (not an exact pair)";
        }
      }
      out += "\n";
    }
  }
  return out;
}

Status WriteEvalResults(const EvalResult& r, const EvalOptions& o) {
  const std::string routing = o.run.config.pipeline().routing();
  std::string csv =
      "milestone,records,shards,routing,rho,threshold,pages,only_system,only_baseline,system_pairs,baseline_pairs,"
      "common_pairs,rep,rer,dropped,dropped_close,drop_precision,true_pairs,both_kept,redundancy,"
      "same_market_redundancy,kept_share,changed,"
      "fast_path,fast_path_share,verifications,rejections,rejection_rate,repairs,run_seconds,baseline_seconds,"
      "greedy_kept_share,extra_pairs,missed_pairs";
  for (size_t c = 0; c < kWrongCauses; ++c) {
    const std::string name = WrongCauseName(static_cast<WrongCause>(c));
    csv += ",extra_" + name + ",missed_" + name;
  }
  csv += "\n";
  std::string json = "{\"input\":";
  AppendJsonString(&json, o.run.input);
  json += ",\"input_records\":" + std::to_string(r.input_records) + ",\"routing\":";
  AppendJsonString(&json, routing);
  AppendJsonField(&json, "rho", o.run.config.pipeline().rho());
  AppendJsonField(&json, "threshold", o.run.threshold);
  json += std::string(",\"complete\":") + (r.stopped ? "false" : "true") + ",\"points\":[";
  for (size_t k = 0; k < r.points.size(); ++k) {
    const EvalPoint& p = r.points[k];
    const GroupingAccuracy& a = p.accuracy;
    const CrawlerView& v = p.view;
    const double fp = p.changed ? double(p.fast_path) / double(p.changed) : 0;
    const double rej = p.verifications ? double(p.rejections) / double(p.verifications) : 0;
    char line[1024];
    std::snprintf(line, sizeof line,
                  "%g,%llu,%u,%s,%g,%g,%llu,%llu,%llu,%llu,%llu,%llu,%.6f,%.6f,%llu,%llu,%.6f,%llu,%llu,%.6f,%.6f,%.6f,%llu,"
                  "%llu,%.6f,%llu,%llu,%.6f,%llu,%.3f,%.3f\n",
                  p.milestone, (unsigned long long)p.records, p.shards, routing.c_str(), o.run.config.pipeline().rho(),
                  o.run.threshold, (unsigned long long)a.pages, (unsigned long long)a.only_system,
                  (unsigned long long)a.only_baseline, (unsigned long long)a.system_pairs,
                  (unsigned long long)a.baseline_pairs, (unsigned long long)a.common_pairs, a.rep(), a.rer(),
                  (unsigned long long)v.dropped, (unsigned long long)v.dropped_close, v.drop_precision(),
                  (unsigned long long)v.true_pairs, (unsigned long long)v.both_kept, v.redundancy(),
                  v.same_market_redundancy(), v.kept_share(), (unsigned long long)p.changed, (unsigned long long)p.fast_path, fp,
                  (unsigned long long)p.verifications, (unsigned long long)p.rejections, rej,
                  (unsigned long long)p.repairs, p.run_seconds, p.baseline_seconds);
    csv += line;
    csv.pop_back();  // the newline: the columns below go on
    csv += ",";
    AppendJsonNumber(&csv, v.greedy_kept_share());
    csv += "," + std::to_string(p.wrong.extra) + "," + std::to_string(p.wrong.missed);
    for (const WrongPairCause& c : p.wrong.causes) csv += "," + std::to_string(c.extra) + "," + std::to_string(c.missed);
    csv += "\n";
    std::snprintf(line, sizeof line,
                  "%s{\"milestone\":%g,\"records\":%llu,\"shards\":%u,\"pages\":%llu,\"system_pairs\":%llu,"
                  "\"baseline_pairs\":%llu,\"common_pairs\":%llu,\"rep\":%.6f,\"rer\":%.6f,\"drop_precision\":%.6f,"
                  "\"dropped\":%llu,\"redundancy\":%.6f,\"same_market_redundancy\":%.6f,\"true_pairs\":%llu,\"both_kept\":%llu,\"kept_share\":%.6f,"
                  "\"changed\":%llu,\"fast_path_share\":%.6f,\"verifications\":%llu,\"rejections\":%llu,"
                  "\"rejection_rate\":%.6f,\"repairs\":%llu,\"run_seconds\":%.3f,\"baseline_seconds\":%.3f}",
                  k == 0 ? "" : ",", p.milestone, (unsigned long long)p.records, p.shards,
                  (unsigned long long)a.pages, (unsigned long long)a.system_pairs,
                  (unsigned long long)a.baseline_pairs, (unsigned long long)a.common_pairs, a.rep(), a.rer(),
                  v.drop_precision(), (unsigned long long)v.dropped, v.redundancy(), v.same_market_redundancy(),
                  (unsigned long long)v.true_pairs,
                  (unsigned long long)v.both_kept, v.kept_share(), (unsigned long long)p.changed, fp,
                  (unsigned long long)p.verifications, (unsigned long long)p.rejections, rej,
                  (unsigned long long)p.repairs, p.run_seconds, p.baseline_seconds);
    json += line;
    json.pop_back();  // the closing brace: the fields below go on
    AppendJsonField(&json, "greedy_kept_share", v.greedy_kept_share());
    json += ",\"wrong_pairs\":{\"extra\":" + std::to_string(p.wrong.extra) + ",\"missed\":" +
            std::to_string(p.wrong.missed) + ",\"causes\":{";
    for (size_t c = 0; c < kWrongCauses; ++c) {
      const WrongPairCause& wc = p.wrong.causes[c];
      json += c == 0 ? "\"" : ",\"";
      json += WrongCauseName(static_cast<WrongCause>(c));
      json += "\":{\"extra\":" + std::to_string(wc.extra) + ",\"missed\":" + std::to_string(wc.missed) + ",\"examples\":[";
      for (size_t e = 0; e < wc.examples.size(); ++e) {
        const WrongPairExample& ex = wc.examples[e];
        json += e == 0 ? "{\"a\":" : ",{\"a\":";
        AppendJsonString(&json, ex.a);
        json += ",\"b\":";
        AppendJsonString(&json, ex.b);
        json += ex.extra ? ",\"extra\":true" : ",\"extra\":false";
        if (ex.similarity) AppendJsonField(&json, "similarity", *ex.similarity);
        json += "}";
      }
      json += "]}";
    }
    json += "}}}";  // causes, wrong_pairs, the point
  }
  json += "]}\n";
  const fs::path dir(o.out_dir);
  RETURN_IF_ERROR(WriteFile((dir / "eval.csv").string(), csv));
  RETURN_IF_ERROR(WriteFile((dir / "eval.json").string(), json));
  RETURN_IF_ERROR(WriteFile((dir / "causes.txt").string(), FormatWrongPairs(r)));
  return WriteFile((dir / "table.txt").string(), FormatEvalTable(r, r.shards));
}

namespace {

// `s` as one shell word (single-quoted).
std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// `s` as a gnuplot double-quoted string.
std::string GnuplotQuote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

Status DrawEvalPlot(const EvalResult& r, const EvalOptions& o, bool* drawn) {
  *drawn = false;
  const fs::path dir(o.out_dir);
  const std::string csv = (dir / "eval.csv").string(), png = (dir / "eval.png").string();
  const std::string gp = (dir / "eval.gp").string();
  const std::string routing = o.run.config.pipeline().routing();
  std::string script = fmt::format(
      "# REP and RER (%) by milestone against the exact baseline, from eval.csv: neardup eval writes\n"
      "# this and runs it when gnuplot is installed (else: gnuplot {}).\n"
      "set terminal pngcairo size 1000,450 noenhanced\n"
      "set output {}\n"
      "set datafile separator \",\"\n"
      "set multiplot layout 1,2 title \"REP and RER against the exact baseline ({} routing{}, threshold {}, {} records)\"\n"
      "set xlabel \"milestone (% of the crawl)\"; set grid; set key below; set xrange [0:105]\n"
      "$paper << EOD\n0.1,0.8,1.3\n0.2,0.85,1.5\n0.3,0.9,1.55\n0.5,0.85,1.6\n0.75,1,1.67\n1,1.3,1.6\nEOD\n",
      gp, GnuplotQuote(png), routing, routing == "rho" ? fmt::format(" {}", o.run.config.pipeline().rho()) : "",
      o.run.threshold, r.input_records);
  // Columns of eval.csv: 1 milestone, 3 shards, 13 rep, 14 rer. The paper's Table 1 at 12
  // machines: milestone, REP %, RER %.
  for (const auto& [column, name, paper_column] : {std::tuple{13, "REP", 2}, std::tuple{14, "RER", 3}}) {
    script += fmt::format("set ylabel \"{} (%)\"; set title \"{}\"\nplot ", name,
                          column == 13 ? "REP: pairs grouped that the baseline does not group"
                                       : "RER: the baseline's pairs the run does not group");
    for (uint32_t shards : r.shards) {
      script += fmt::format("{} using (100*$1):(100*${}) with linespoints lw 2 title \"{} shards\", ",
                            GnuplotQuote("< awk -F, 'NR > 1 && $3 == " + std::to_string(shards) + "' " + ShellQuote(csv)),
                            column, shards);
    }
    script += fmt::format("$paper using (100*$1):{} with linespoints dt 2 lw 2 title \"paper, 12 machines\"\n",
                          paper_column);
  }
  script += "unset multiplot\n";
  RETURN_IF_ERROR(WriteFile(gp, script));
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) return Status::Ok();
  const int rc = std::system(("gnuplot " + ShellQuote(gp) + " 2>" + ShellQuote((dir / "eval.gp.log").string())).c_str());
  if (rc != 0) return Internal("eval: gnuplot " + gp + " failed (its messages: " + (dir / "eval.gp.log").string() + ")");
  std::error_code ec;
  fs::remove(dir / "eval.gp.log", ec);
  *drawn = true;
  return Status::Ok();
}

}  // namespace neardup::experiments
