// neardup config check FILE: validates a configuration file against the schema.
#include <cstdio>

#include "cli/commands.h"
#include "common/config.h"

namespace neardup::cli {

void RegisterConfig(CLI::App& app, int* exit_code) {
  auto* cfg = app.add_subcommand("config", "Configuration files");
  cfg->require_subcommand(1);
  auto* check = cfg->add_subcommand("check", "Check a textproto config; print it with defaults filled in");
  auto path = std::make_shared<std::string>();
  check->add_option("file", *path, "configuration file")->required();
  check->callback([path, exit_code] {
    auto c = LoadConfig(*path);
    if (!c.ok()) {
      std::fprintf(stderr, "%s\n", c.status().message().c_str());
      *exit_code = 2;
      return;
    }
    std::printf("%s: OK\n%s", path->c_str(), c->DebugString().c_str());
  });
}

}  // namespace neardup::cli
