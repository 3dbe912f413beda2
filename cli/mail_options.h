// What the unified threads and domain counts commands share (email_threads_command.cc,
// email_domains_command.cc): their flags' values, the options worded once, the configuration, the
// error report and the output.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "common/status.h"
#include "proto/config.pb.h"

namespace neardup::cli {

struct MailArgs {
  std::string input, store, config, out, truth, gid, thread, team, team_gids, inviter, invitee;
  uint64_t sync_every = 10'000;
  bool heal_all = false;
  uint64_t count = 100'000, seed = 1;
};

// Logs "what: message"; the exit code: 2 for InvalidArgument (bad usage or input), else 1.
int MailFailed(const char* what, const Status& s);
// The --config file, or the built-in defaults when none is given.
StatusOr<pb::NeardupConfig> MailConfig(const std::string& path);
double MailSecondsSince(std::chrono::steady_clock::time_point t);
// InvalidArgument when a command that reads a store is given one that does not exist.
Status StoreExists(const MailArgs& a, const char* writer);
// One line to stdout.
void WriteLine(std::string line);
// "-": stdout; else the file created (null, errno set, when it cannot be).
std::FILE* OpenOut(const std::string& path);
// Flushes stdout or closes the file; 1 (logged) when the writes failed.
int CloseOut(std::FILE* f, const std::string& path);

// The options several subcommands share, worded once.
void InputOption(CLI::App* c, MailArgs* a, const char* what);
void StoreOption(CLI::App* c, MailArgs* a, bool created);
void ConfigOption(CLI::App* c, MailArgs* a, const char* what = "configuration (configs/email.textproto)");
void GenOptions(CLI::App* c, MailArgs* a, const char* count, const char* what);

}  // namespace neardup::cli
