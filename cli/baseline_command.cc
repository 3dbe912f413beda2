// neardup baseline: the exact single-node all-pairs baseline.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "baseline/baseline.h"
#include "cli/commands.h"
#include "cli/common_options.h"
#include "common/progress.h"

namespace neardup::cli {
namespace {

void PrintLargestGroups(const baseline::BaselineResult& r, size_t n) {
  std::map<uint32_t, std::vector<uint32_t>> groups;
  for (uint32_t i = 0; i < r.pages.size(); ++i) {
    if (r.pages[i].crawled) groups[r.pages[i].group].push_back(i);
  }
  std::vector<const std::pair<const uint32_t, std::vector<uint32_t>>*> order;
  for (const auto& g : groups) {
    if (g.second.size() >= 2) order.push_back(&g);
  }
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->second.size() > b->second.size(); });
  std::printf("%zu duplicate groups with 2+ pages; the %zu largest:\n", order.size(), std::min(n, order.size()));
  for (size_t k = 0; k < order.size() && k < n; ++k) {
    std::printf("group %u (%zu pages)\n", order[k]->first, order[k]->second.size());
    for (uint32_t i : order[k]->second) {
      const auto& p = r.pages[i];
      std::printf("  %s%s\n", p.url.c_str(), p.redirect ? "  (redirect)" : "");
    }
  }
}

}  // namespace

void RegisterBaseline(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("baseline", "Exact all-pairs near-duplicate baseline: every pair with Jaccard >= threshold, and their groups");
  struct Args {
    std::string input, pairs, groups;
    SharedOptions shared;
    size_t show = 0;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("--input", args->input, "crawl JSON Lines (- for stdin)")->required();
  cmd->add_option("--pairs", args->pairs, "write {a, b, similarity} per pair here");
  cmd->add_option("--groups", args->groups, "write {url, group} per crawled URL here");
  cmd->add_option("--show", args->show, "print the N largest groups with their URLs to stdout");
  AddSharedOptions(cmd, &args->shared);
  cmd->callback([args, exit_code] {
    auto opts = ResolveShared(args->shared);
    if (!opts.ok()) {
      spdlog::error("{}", opts.status().message());
      *exit_code = 2;
      return;
    }
    baseline::BaselineOptions o;
    o.input = args->input;
    o.threshold = opts->threshold;
    o.signer = opts->signer;
    o.reader = opts->reader;
    o.threads = opts->threads;
    auto r = baseline::RunBaseline(o);
    if (!r.ok()) {
      spdlog::error("baseline: {}", r.status().message());
      *exit_code = 1;
      return;
    }
    if (!args->pairs.empty()) {
      if (Status s = baseline::WritePairs(*r, args->pairs); !s.ok()) {
        spdlog::error("{}", s.message());
        *exit_code = 1;
        return;
      }
    }
    if (!args->groups.empty()) {
      if (Status s = baseline::WriteGroups(*r, args->groups); !s.ok()) {
        spdlog::error("{}", s.message());
        *exit_code = 1;
        return;
      }
    }
    const auto& j = r->join;
    const double pps = r->total_seconds > 0 ? r->records / r->total_seconds : 0;
    std::fprintf(stderr,
                 "baseline: %s\n"
                 "baseline: %llu content pages, %llu redirects, %llu empty, %llu gone, %llu redirect cycles\n"
                 "baseline: threshold %.3g, k %d: %llu pairs, %llu groups (%llu with 2+ pages)\n"
                 "baseline: join: %llu shingles, %llu in 2+ pages, %llu postings, %llu candidates verified\n"
                 "baseline: %.2fs total (read+sign %.2fs, order %.2fs, join %.2fs), %.0f records/s, peak RSS %.1f MiB\n",
                 SummarizeReader(r->reader).c_str(), (unsigned long long)r->content_pages,
                 (unsigned long long)r->redirect_pages, (unsigned long long)r->empty_pages,
                 (unsigned long long)r->gone_pages, (unsigned long long)r->redirect_cycles, o.threshold, o.signer.k,
                 (unsigned long long)r->pairs.size(), (unsigned long long)r->groups, (unsigned long long)r->multi_groups, (unsigned long long)j.tokens,
                 (unsigned long long)j.frequent_tokens, (unsigned long long)j.indexed_entries,
                 (unsigned long long)j.candidates, r->total_seconds, r->read_sign_seconds, j.order_seconds,
                 j.join_seconds, pps, PeakRssBytes() / 1048576.0);
    if (args->show > 0) PrintLargestGroups(*r, args->show);
  });
}

}  // namespace neardup::cli
