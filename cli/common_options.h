// Options shared by the subcommands that read crawls: --config plus per-run overrides.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <optional>
#include <string>

#include "common/status.h"
#include "document/crawl_reader.h"
#include "document/signature.h"
#include "proto/config.pb.h"

namespace neardup::cli {

struct SharedOptions {
  std::string config;                  // textproto; empty = built-in defaults
  std::optional<double> threshold;
  std::optional<int> shingle_k;
  std::optional<int> dims;
  std::optional<int> threads;
  std::optional<uint64_t> max_line_bytes;
};

struct ResolvedOptions {
  double threshold;
  SignerOptions signer;
  CrawlReaderOptions reader;
  int threads;
  pb::NeardupConfig config;  // the whole file, defaults filled in, with --shingle-k and --dims applied
  // The store parameters given explicitly, by a flag or a field set in the --config file, with
  // where (pipeline/store.h): a store built with other values refuses them; defaults yield to it.
  std::map<std::string, std::string> given;
};

void AddSharedOptions(CLI::App* cmd, SharedOptions* o);

// Loads the config (if any) and applies the command-line overrides. InvalidArgument with
// file:line:column for a bad config, or naming the flag for a bad value.
StatusOr<ResolvedOptions> ResolveShared(const SharedOptions& o);

// A server's --port-file: the port it listens on, written atomically (a temporary file renamed),
// so that a script waiting for the file never reads half of it. Nothing when `path` is empty.
void WritePortFile(const std::string& path, uint16_t port);

}  // namespace neardup::cli
