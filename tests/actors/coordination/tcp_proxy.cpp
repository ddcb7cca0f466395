#include "tests/actors/coordination/tcp_proxy.hpp"

#include <map>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace lifeboat::test {

namespace {

constexpr size_t chunk_bytes = 64 * 1024;

sockaddr_in loopback(uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

bool send_all(int fd, const char* p, size_t size) {
  while (size > 0) {
    auto n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

tcp_proxy::tcp_proxy(uint16_t upstream_port) : upstream_port_(upstream_port) {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  auto addr = loopback(0);
  socklen_t len = sizeof(addr);
  if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listener_, 16) != 0 ||
      ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || ::pipe(stop_) != 0)
    return;
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread{[this] { run(); }};
}

tcp_proxy::~tcp_proxy() {
  if (thread_.joinable()) {
    [[maybe_unused]] auto n = ::write(stop_[1], "x", 1);
    thread_.join();
  }
  for (int fd : {listener_, stop_[0], stop_[1]})
    if (fd >= 0) ::close(fd);
}

std::string tcp_proxy::recorded() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return recorded_;
}

bool tcp_proxy::forward(int from, int to, bool upstream) {
  std::vector<char> buf(chunk_bytes);
  auto n = ::recv(from, buf.data(), buf.size(), 0);
  if (n <= 0) return false;
  if (upstream && flip_.exchange(false)) {
    buf[static_cast<size_t>(n) / 2] ^= 0x01;
    flipped_ = true;
  }
  {
    std::lock_guard<std::mutex> guard{mtx_};
    recorded_.append(buf.data(), static_cast<size_t>(n));
  }
  return send_all(to, buf.data(), static_cast<size_t>(n));
}

void tcp_proxy::run() {
  // Each accepted (downstream) socket and its upstream socket, both ways.
  std::map<int, int> peer;
  std::map<int, bool> is_downstream;
  for (;;) {
    std::vector<pollfd> fds{{stop_[0], POLLIN, 0}, {listener_, POLLIN, 0}};
    for (auto& [fd, other] : peer) fds.push_back({fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) break;
    if (fds[0].revents != 0) break;
    if (fds[1].revents != 0) {
      int down = ::accept(listener_, nullptr, nullptr);
      int up = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      auto addr = loopback(upstream_port_);
      if (down >= 0 && up >= 0 &&
          ::connect(up, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
        peer[down] = up;
        peer[up] = down;
        is_downstream[down] = true;
        is_downstream[up] = false;
      } else {
        if (down >= 0) ::close(down);
        if (up >= 0) ::close(up);
      }
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents == 0 || peer.count(fds[i].fd) == 0) continue;
      int fd = fds[i].fd;
      int other = peer[fd];
      // Either side closing closes the pair: the other sees it as the
      // connection's end, as it would without the proxy.
      if (forward(fd, other, is_downstream[fd])) continue;
      for (int x : {fd, other}) {
        ::close(x);
        peer.erase(x);
        is_downstream.erase(x);
      }
    }
  }
  for (auto& [fd, other] : peer) ::close(fd);
}

}  // namespace lifeboat::test
