#pragma once

// Raw TCP on 127.0.0.1 for the benchmarks' floors: what a transfer costs on
// this host before lifeboat adds anything. Every wait is bounded.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace lifeboat::bench {

constexpr const char* loopback_host = "127.0.0.1";

/// An fd closed when this goes away.
struct fd_guard {
  int fd = -1;
  fd_guard() = default;
  explicit fd_guard(int x) : fd(x) {}
  fd_guard(fd_guard&& other) noexcept : fd(other.fd) { other.fd = -1; }
  fd_guard(const fd_guard&) = delete;
  fd_guard& operator=(const fd_guard&) = delete;
  fd_guard& operator=(fd_guard&&) = delete;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

inline void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/// Reads or writes exactly `size` bytes, each wait bounded by `timeout`.
inline bool transfer_all(int fd, char* data, size_t size, bool sending,
                         std::chrono::milliseconds timeout) {
  while (size > 0) {
    pollfd pfd{fd, static_cast<short>(sending ? POLLOUT : POLLIN), 0};
    if (::poll(&pfd, 1, static_cast<int>(timeout.count())) <= 0) return false;
    auto n = sending ? ::send(fd, data, size, MSG_NOSIGNAL) : ::recv(fd, data, size, 0);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

/// A listening socket on a free port of 127.0.0.1; fd -1 on failure.
inline fd_guard listen_loopback(int backlog, uint16_t& port) {
  fd_guard listener{::socket(AF_INET, SOCK_STREAM, 0)};
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  ::inet_pton(AF_INET, loopback_host, &addr.sin_addr);
  socklen_t len = sizeof(addr);
  if (listener.fd < 0 || ::bind(listener.fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::listen(listener.fd, backlog) != 0 ||
      ::getsockname(listener.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return fd_guard{};
  port = ntohs(addr.sin_port);
  return listener;
}

/// A connection to 127.0.0.1:port with TCP_NODELAY; fd -1 on failure.
inline fd_guard connect_loopback(uint16_t port) {
  fd_guard conn{::socket(AF_INET, SOCK_STREAM, 0)};
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  ::inet_pton(AF_INET, loopback_host, &addr.sin_addr);
  if (conn.fd < 0 || ::connect(conn.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
    return fd_guard{};
  set_nodelay(conn.fd);
  return conn;
}

/// The next connection within `timeout`, with TCP_NODELAY; fd -1 if none came.
inline fd_guard accept_within(int listener, std::chrono::milliseconds timeout) {
  pollfd pfd{listener, POLLIN, 0};
  if (::poll(&pfd, 1, static_cast<int>(timeout.count())) <= 0) return fd_guard{};
  fd_guard conn{::accept(listener, nullptr, nullptr)};
  if (conn.fd >= 0) set_nodelay(conn.fd);
  return conn;
}

}  // namespace lifeboat::bench
