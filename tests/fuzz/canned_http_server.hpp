#pragma once

// A loopback HTTP server for the metadata parsers' fuzz targets: it reads
// each request's header and answers with canned bytes, then closes the
// connection. The bytes need not be HTTP at all. The fuzz input holds the
// replies in turn, separated by reply_separator; the last one answers every
// further request (a source asks several questions per poll: GCE two values,
// AWS a token and then two documents).
//
// Thread-safety: set_replies may be called from any thread while the server
// runs; the server's one thread lives as long as the object.

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace lifeboat::fuzz {

class canned_http_server {
 public:
  canned_http_server() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listen_fd_, 16) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      throw std::runtime_error("canned_http_server: cannot listen");
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread{[this] { run(); }};
  }

  ~canned_http_server() {
    stop_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    thread_.join();
    ::close(listen_fd_);
  }

  canned_http_server(const canned_http_server&) = delete;
  canned_http_server& operator=(const canned_http_server&) = delete;

  uint16_t port() const { return port_; }

  static constexpr const char* reply_separator = "@@next@@";

  /// The replies to the requests from now on, split out of `input`.
  void set_replies(const std::string& input) {
    std::vector<std::string> parts;
    std::string separator{reply_separator};
    size_t from = 0;
    for (auto at = input.find(separator); at != std::string::npos;
         from = at + separator.size(), at = input.find(separator, from))
      parts.push_back(input.substr(from, at - from));
    parts.push_back(input.substr(from));
    std::lock_guard<std::mutex> guard{mutex_};
    replies_ = std::move(parts);
    next_ = 0;
  }

 private:
  // Bounds the wait for a client's request; the clients under test send at
  // once, so this only ends a connection a client gave up on. libFuzzer's
  // timeout alarm interrupts calls now and then (EINTR): those are retried.
  static constexpr int request_wait_ms = 2000;

  void run() {
    while (!stop_) {
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      read_request_header(fd);
      std::string reply;
      {
        std::lock_guard<std::mutex> guard{mutex_};
        if (!replies_.empty()) reply = replies_[std::min(next_++, replies_.size() - 1)];
      }
      size_t sent = 0;
      while (sent < reply.size()) {
        auto n = ::send(fd, reply.data() + sent, reply.size() - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
      }
      ::shutdown(fd, SHUT_WR);
      ::close(fd);
    }
  }

  static void read_request_header(int fd) {
    std::string got;
    char buf[1024];
    while (got.find("\r\n\r\n") == std::string::npos) {
      pollfd p{fd, POLLIN, 0};
      int rc = ::poll(&p, 1, request_wait_ms);
      if (rc < 0 && errno == EINTR) continue;
      if (rc != 1) return;
      auto n = ::recv(fd, buf, sizeof(buf), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      got.append(buf, static_cast<size_t>(n));
    }
  }

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<std::string> replies_;
  size_t next_ = 0;
  std::thread thread_;
};

}  // namespace lifeboat::fuzz
