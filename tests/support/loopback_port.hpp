#pragma once

// Ports on 127.0.0.1 for the tests that start servers: one held busy by a
// listener (what a server does when its port is taken) and one that nothing
// listens on (where a server may be started, or where a connection is refused).

#include <cstdint>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace lifeboat::test {

/// A port on 127.0.0.1 that a listening socket holds until destruction; 0
/// when none could be had. A listener, not just a bound socket: Linux lets a
/// server with SO_REUSEADDR bind a port that is bound but not listened on.
class held_port {
 public:
  held_port() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        ::listen(fd_, 1) == 0 && ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
      port_ = ntohs(addr.sin_port);
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

/// A port on 127.0.0.1 that nothing listens on: held, then released. Another
/// process may take it in between, as with any port picked this way.
inline uint16_t unused_port() { return held_port{}.port(); }

}  // namespace lifeboat::test
