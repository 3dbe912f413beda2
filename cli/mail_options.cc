#include "cli/mail_options.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/config.h"

namespace neardup::cli {

int MailFailed(const char* what, const Status& s) {
  spdlog::error("{}: {}", what, s.message());
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

StatusOr<pb::NeardupConfig> MailConfig(const std::string& path) {
  if (path.empty()) return DefaultConfig();
  return LoadConfig(path);
}

double MailSecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

Status StoreExists(const MailArgs& a, const char* writer) {
  if (std::filesystem::exists(a.store)) return Status::Ok();
  return InvalidArgument("--store " + a.store + " does not exist (run " + writer + " first)");
}

void WriteLine(std::string line) {
  line.push_back('\n');
  std::fwrite(line.data(), 1, line.size(), stdout);
}

std::FILE* OpenOut(const std::string& path) { return path == "-" ? stdout : std::fopen(path.c_str(), "wb"); }

int CloseOut(std::FILE* f, const std::string& path) {
  if (f == stdout) return std::fflush(f) == 0 ? 0 : 1;
  if (std::fclose(f) != 0) {
    spdlog::error("cannot write {}: {}", path, std::strerror(errno));
    return 1;
  }
  return 0;
}

void InputOption(CLI::App* c, MailArgs* a, const char* what) { c->add_option("--input", a->input, what)->required(); }
void StoreOption(CLI::App* c, MailArgs* a, bool created) {
  c->add_option("--store", a->store, created ? "the store's directory (created when missing)" : "the store's directory")
      ->required();
}
void ConfigOption(CLI::App* c, MailArgs* a, const char* what) { c->add_option("--config", a->config, what); }
void GenOptions(CLI::App* c, MailArgs* a, const char* count, const char* what) {
  c->add_option(count, a->count, what)->capture_default_str();
  c->add_option("--seed", a->seed, "random seed")->capture_default_str();
  c->add_option("--out", a->out, "JSON Lines to write (- for stdout)")->required();
}

}  // namespace neardup::cli
