#pragma once

// Ports on 127.0.0.1 (or ::1) for the tests that start servers: one held busy
// by a listener (what a server does when its port is taken) and one that
// nothing listens on (where a server may be started, or where a connection is
// refused).

#include <cstdint>

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
  explicit held_port(int family = AF_INET) {
    fd_ = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_storage addr{};
    socklen_t len = 0;
    if (family == AF_INET6) {
      auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
      v6->sin6_family = AF_INET6;
      v6->sin6_addr = in6addr_loopback;
      len = sizeof(sockaddr_in6);
    } else {
      auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
      v4->sin_family = AF_INET;
      v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
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

/// A port on 127.0.0.1 (::1 with AF_INET6) that nothing listens on: held,
/// then released. Another process may take it in between, as with any port
/// picked this way.
inline uint16_t unused_port(int family = AF_INET) { return held_port{family}.port(); }

}  // namespace lifeboat::test
