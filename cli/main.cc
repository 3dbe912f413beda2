// neardup: near-duplicate detection. One binary, one subcommand per job; `neardup --help`.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "common/progress.h"

int main(int argc, char** argv) {
  CLI::App app{"neardup: incremental near-duplicate detection (two-tier design)"};
  app.require_subcommand(1);
  app.fallthrough();
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off (logs go to stderr)")
      ->capture_default_str();
  app.parse_complete_callback([&] {
    if (!neardup::SetLogLevel(log_level)) throw CLI::ValidationError("--log-level", "unknown level " + log_level);
  });
  int exit_code = 0;
  neardup::cli::RegisterBaseline(app, &exit_code);
  neardup::cli::RegisterGenCrawl(app, &exit_code);
  neardup::cli::RegisterExtract(app, &exit_code);
  neardup::cli::RegisterBench(app, &exit_code);
  neardup::cli::RegisterConfig(app, &exit_code);
  neardup::cli::RegisterPartition(app, &exit_code);
  neardup::cli::RegisterRebalance(app, &exit_code);
  neardup::cli::RegisterExperiment(app, &exit_code);
  neardup::cli::RegisterEval(app, &exit_code);
  neardup::cli::RegisterRun(app, &exit_code);
  neardup::cli::RegisterCheck(app, &exit_code);
  neardup::cli::RegisterAccuracy(app, &exit_code);
  neardup::cli::RegisterStatus(app, &exit_code);
  neardup::cli::RegisterTier2Server(app, &exit_code);
  neardup::cli::RegisterTier1Server(app, &exit_code);
  neardup::cli::RegisterIngest(app, &exit_code);
  neardup::cli::RegisterCluster(app, &exit_code);
  neardup::cli::RegisterCerts(app, &exit_code);
  neardup::cli::RegisterFaultProxy(app, &exit_code);
  neardup::cli::RegisterEmail(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // app.exit prints the message (or the help); bad usage is exit code 2 for every subcommand.
    return app.exit(e) == 0 ? 0 : 2;
  }
  return exit_code;
}
