// Bearer tokens kept in files: read by the servers and the clients, made by `neardup cluster up`.
//
//   ASSIGN_OR_RETURN(std::string token, ReadBearerTokenFile("/etc/neardup/token"));
//   RETURN_IF_ERROR(WriteBearerTokenFile(dir + "/token", GenerateBearerToken()));
//
// Thread safety: pure functions (and the file system).
#pragma once

#include <string>

#include "common/status.h"

namespace neardup::cluster {

// The token in `path`: its first line, without the line end or surrounding spaces ("\r\n" from an
// editor included). InvalidArgument, naming the file, when it cannot be read, holds no token, or
// can be read by anyone but its owner (group or other permission bits: "chmod 600 it").
StatusOr<std::string> ReadBearerTokenFile(const std::string& path);

// A new token: 32 random bytes from the system's generator, as 64 hex digits.
std::string GenerateBearerToken();

// Writes `token` and a line end to `path`, created with mode 0600 (an existing file is replaced
// by a rename, never opened wider), and synced. IoError naming the file otherwise.
Status WriteBearerTokenFile(const std::string& path, const std::string& token);

}  // namespace neardup::cluster
