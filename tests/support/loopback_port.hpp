#pragma once

// Ports on 127.0.0.1 (or ::1) for the tests that start servers: one held busy
// by a listener (what a server does when its port is taken) and one that
// nothing listens on (where a server may be started, or where a connection is
// refused).

#include <cstdint>
#include <fstream>
#include <random>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace lifeboat::test {

/// A port on 127.0.0.1 (::1 with AF_INET6) that a listening socket holds
/// until destruction; 0 when none could be had (a host without IPv6). A
/// listener, not just a bound socket: Linux lets a server with SO_REUSEADDR
/// bind a port that is bound but not listened on.
class held_port {
 public:
  /// `port` 0: one the kernel picks, from its ephemeral range.
  explicit held_port(int family = AF_INET, uint16_t port = 0) {
    fd_ = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_storage addr{};
    socklen_t len = 0;
    if (family == AF_INET6) {
      auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
      v6->sin6_family = AF_INET6;
      v6->sin6_addr = in6addr_loopback;
      v6->sin6_port = htons(port);
      len = sizeof(sockaddr_in6);
    } else {
      auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
      v4->sin_family = AF_INET;
      v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      v4->sin_port = htons(port);
      len = sizeof(sockaddr_in);
    }
    auto* any = reinterpret_cast<sockaddr*>(&addr);
    if (fd_ >= 0 && ::bind(fd_, any, len) == 0 && ::listen(fd_, 1) == 0 &&
        ::getsockname(fd_, any, &len) == 0)
      port_ = ntohs(family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                       : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  }
  held_port(const held_port&) = delete;
  held_port& operator=(const held_port&) = delete;
  ~held_port() {
    if (fd_ >= 0) ::close(fd_);
  }

  uint16_t port() const { return port_; }
  /// The listening socket, for a test that plays a stranger on the port.
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

/// The first port of the range the kernel gives to sockets that do not ask
/// for one (/proc/sys/net/ipv4/ip_local_port_range; Linux's default 32768).
inline uint16_t first_ephemeral_port() {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  unsigned first = 0;
  return range >> first && first > 0 && first < 65536 ? static_cast<uint16_t>(first) : 32768;
}

/// A port on 127.0.0.1 (::1 with AF_INET6) that nothing listens on: held,
/// then released; 0 when none could be had. Another process that asks for
/// this port by number may take it in between.
inline uint16_t unused_port(int family = AF_INET) {
  // Below the ephemeral range: a port from it may become, between this pick
  // and the server's bind, the local end of any connection on the machine
  // (the tests' own workers dial a coordinator hundreds of times a second),
  // and the server then fails with "Address already in use". Ports below the
  // range go only to those who name them.
  constexpr uint16_t lowest = 10000;
  constexpr int attempts = 200;
  uint16_t end = first_ephemeral_port();
  if (end <= lowest + 1) return held_port{family}.port();
  static thread_local std::mt19937 random{std::random_device{}()};
  std::uniform_int_distribution<int> pick(lowest, end - 1);
  for (int attempt = 0; attempt < attempts; ++attempt)
    if (auto port = held_port{family, static_cast<uint16_t>(pick(random))}.port(); port != 0)
      return port;
  return 0;
}

}  // namespace lifeboat::test
