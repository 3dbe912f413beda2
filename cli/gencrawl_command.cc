// neardup gen-crawl: a deterministic synthetic crawl (see gencrawl/crawl_generator.h).
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cli/commands.h"
#include "common/progress.h"
#include "gencrawl/crawl_generator.h"

namespace neardup::cli {

void RegisterGenCrawl(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("gen-crawl", "Generate a realistic synthetic crawl (deterministic per seed)");
  struct Args {
    gencrawl::CrawlGenOptions gen;
    std::string out, truth;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("--pages", args->gen.pages, "crawl records to write")->required();
  cmd->add_option("--seed", args->gen.seed, "random seed")->capture_default_str();
  cmd->add_option("--out", args->out, "crawl JSON Lines to write (- for stdout)")->required();
  cmd->add_option("--truth", args->truth, "write each record's family and kind here");
  cmd->add_option("--html-share", args->gen.html_share, "share of content records written as HTML")->capture_default_str();
  cmd->add_option("--epoch", args->gen.epoch, "crawl epoch whose length mixture has drifted (see --length-drift)")->capture_default_str();
  cmd->add_option("--length-drift", args->gen.length_drift,
                  "per epoch: length spikes' weights x exp(+-d), body median x exp(d/2) (0 = no drift)")->capture_default_str();
  cmd->add_option("--drift", args->gen.drift,
                  "0..1: later pages of this crawl are longer (long first fetches drawn later, short ones earlier)")
      ->capture_default_str();
  cmd->add_option("--gone-share", args->gen.gone_share,
                  "share of the recrawls that find the page gone (404/410), written as gone records")->capture_default_str();
  cmd->add_option("--second-crawl-overlap", args->gen.second_crawl_overlap,
                  "0..1: write two crawls, the second 14 days later with this share of its records refetching the "
                  "first's URLs (the first half of the lines is the first crawl)")->capture_default_str();
  cmd->add_option("--shingle-k", args->gen.shingle_k, "k used for the truth file's jaccard_to_source")->capture_default_str();
  cmd->callback([args, exit_code] {
    auto open = [](const std::string& path) -> std::FILE* {
      return path == "-" ? stdout : std::fopen(path.c_str(), "wb");
    };
    std::FILE* out = open(args->out);
    if (out == nullptr) { spdlog::error("cannot write {}: {}", args->out, std::strerror(errno)); *exit_code = 1; return; }
    std::FILE* truth = nullptr;
    if (!args->truth.empty()) {
      truth = open(args->truth);
      if (truth == nullptr) { spdlog::error("cannot write {}: {}", args->truth, std::strerror(errno)); *exit_code = 1; return; }
    }
    Progress progress("gen-crawl");
    gencrawl::CrawlGenStats stats{};
    Status s = gencrawl::GenerateCrawl(args->gen, out, truth, &stats);
    int close_rc = out == stdout ? std::fflush(out) : std::fclose(out);
    if (truth != nullptr && truth != stdout) close_rc |= std::fclose(truth);
    if (s.ok() && close_rc != 0) s = IoError("closing the output failed");
    if (!s.ok()) { spdlog::error("gen-crawl: {}", s.message()); *exit_code = s.code() == StatusCode::kInvalidArgument ? 2 : 1; return; }
    const double secs = progress.ElapsedSeconds();
    spdlog::info("gen-crawl: {} records ({} content, {} redirects, {} gone, {} recrawls, {} families), {:.1f} MB in {:.1f}s, "
                 "peak RSS {:.0f} MiB",
                 stats.records, stats.content_records, stats.redirect_records, stats.gone_records, stats.recrawl_records,
                 stats.families, stats.bytes / 1e6, secs, PeakRssBytes() / 1048576.0);
    if (stats.second_crawl_first_line > 0) {
      spdlog::info("gen-crawl: the second crawl starts at line {}: {} of its {} records refetch a URL of the first",
                   stats.second_crawl_first_line, stats.second_crawl_refetches,
                   stats.records - stats.second_crawl_first_line + 1);
    }
  });
}

}  // namespace neardup::cli
