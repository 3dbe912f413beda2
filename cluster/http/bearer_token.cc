#include "cluster/http/bearer_token.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "storage/file_env.h"

namespace neardup::cluster {

StatusOr<std::string> ReadBearerTokenFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return InvalidArgument("cannot read the bearer token file " + path + ": " + std::strerror(errno));
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return InvalidArgument("the bearer token file " + path + " can be read by others (mode " + mode +
                           "): chmod 600 it");
  }
  std::ifstream f(path);
  if (!f) return InvalidArgument("cannot read the bearer token file " + path);
  std::string t;
  std::getline(f, t);
  const size_t begin = t.find_first_not_of(" \t\r\n");
  const size_t end = t.find_last_not_of(" \t\r\n");
  if (begin == std::string::npos) return InvalidArgument("the bearer token file " + path + " holds no token");
  return t.substr(begin, end - begin + 1);
}

std::string GenerateBearerToken() {
  std::random_device rd;  // getrandom(2) on Linux
  static constexpr char kHex[] = "0123456789abcdef";
  std::string t;
  for (int i = 0; i < 8; ++i) {
    const uint32_t v = rd();
    for (int b = 0; b < 8; ++b) t += kHex[(v >> (4 * b)) & 0xf];
  }
  return t;
}

Status WriteBearerTokenFile(const std::string& path, const std::string& token) {
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return IoError("cannot create " + tmp + ": " + std::strerror(errno));
  const std::string line = token + "\n";
  bool ok = ::fchmod(fd, 0600) == 0 && ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
            ::fsync(fd) == 0;
  const int err = errno;
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return IoError("cannot write the bearer token file " + path + ": " + std::strerror(ok ? errno : err));
  }
  // The rename durable too: a power cut must not take back a token a client was given.
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return FileEnv::Default()->SyncDir(dir.empty() ? "." : dir);
}

}  // namespace neardup::cluster
