// RawExchange: bytes sent on a new loopback TCP connection and what comes back, for tests of
// servers against clients that do not follow their protocol.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace neardup::test {

// Sends `bytes` on a new connection and reads until the server closes it or `wait` passes.
// `closed` tells which.
inline std::string RawExchange(uint16_t port, const std::string& bytes, std::chrono::milliseconds wait, bool* closed = nullptr) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return "";
  }
  if (!bytes.empty()) (void)!::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  std::string out;
  const auto until = std::chrono::steady_clock::now() + wait;
  bool eof = false;
  while (!eof) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) break;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) eof = true;
    else out.append(buf, static_cast<size_t>(n));
  }
  if (closed != nullptr) *closed = eof;
  ::close(fd);
  return out;
}

}  // namespace neardup::test
