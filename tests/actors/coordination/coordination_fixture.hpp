#pragma once

// Shared by the in-process coordination tests: an actor system hosting a
// service on 127.0.0.1, clients joining it, and raw sockets speaking to it.

#include <chrono>
#include <optional>
#include <string>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/coordination/coordination_client.hpp"
#include "actors/coordination/coordination_frame.hpp"
#include "actors/coordination/coordination_service.hpp"
#include "actors/system_config.hpp"
#include "messages/errors.hpp"

namespace lifeboat::test {

constexpr int fixture_world_size = 4;
// Sanitized processes run several times slower (770 ms without a heartbeat
// was seen under TSan): a timeout this short would lose workers that are
// only slow. cluster_test still detects a stopped worker within two of these.
#ifdef LIFEBOAT_SANITIZED
constexpr std::chrono::milliseconds fixture_heartbeat_timeout{3000};
#else
constexpr std::chrono::milliseconds fixture_heartbeat_timeout{500};
#endif
constexpr std::chrono::milliseconds fixture_heartbeat_interval{100};
constexpr std::chrono::seconds socket_deadline{5};
inline const std::string fixture_token = "test-token";

/// A blocking TCP connection for feeding the service arbitrary bytes.
class raw_socket {
 public:
  explicit raw_socket(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  raw_socket(const raw_socket&) = delete;
  raw_socket& operator=(const raw_socket&) = delete;
  ~raw_socket() { ::close(fd_); }

  bool connected() const { return connected_; }
  int fd() const { return fd_; }

  bool write_all(const void* data, size_t size) {
    auto* p = static_cast<const char*>(data);
    while (size > 0) {
      auto n = ::send(fd_, p, size, MSG_NOSIGNAL);
      if (n <= 0) return false;
      p += n;
      size -= static_cast<size_t>(n);
    }
    return true;
  }

  bool write_frame(const wire::Envelope& env) {
    auto bytes = encode_frame(env);
    return write_all(bytes.data(), bytes.size());
  }

  /// The next frame, or nullopt when the peer closed or the deadline passed.
  std::optional<wire::Envelope> read_frame(std::chrono::milliseconds timeout = socket_deadline) {
    wire::Envelope env;
    for (;;) {
      if (split_.next(env) == frame_splitter::status::frame) return env;
      if (!fill(timeout)) return std::nullopt;
    }
  }

  /// True when the peer closes the connection before the deadline (data
  /// arriving before the close is skipped).
  bool closed_by_peer(std::chrono::milliseconds timeout = socket_deadline) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd pfd{fd_, POLLIN, 0};
      if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      auto n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return true;
    }
  }

 private:
  bool fill(std::chrono::milliseconds timeout) {
    pollfd pfd{fd_, POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(timeout.count())) <= 0) return false;
    char buf[4096];
    auto n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    split_.append(buf, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  frame_splitter split_;
};

/// A service of the fixture's world size whose connections must join within `bound`.
inline std::pair<caf::actor, uint16_t> service_with_join_bound(caf::actor_system& sys,
                                                               std::chrono::milliseconds bound) {
  service_config cfg;
  cfg.world_size = fixture_world_size;
  cfg.token = fixture_token;
  cfg.heartbeat_timeout = fixture_heartbeat_timeout;
  cfg.join_bound = bound;
  auto spawned = spawn_coordination_service(sys, cfg);
  EXPECT_TRUE(spawned) << describe(spawned.error());
  return spawned ? *spawned : std::pair<caf::actor, uint16_t>{};
}

/// An actor system with a coordination service (fixture_token,
/// fixture_heartbeat_timeout) for fixture_world_size ranks, or as many as a
/// derived fixture starts it with.
class service_fixture : public ::testing::Test {
 protected:
  void SetUp() override { start_service(fixture_world_size); }

  void start_service(int world_size,
                     std::chrono::milliseconds heartbeat_timeout = fixture_heartbeat_timeout) {
    service_config cfg;
    cfg.world_size = world_size;
    cfg.token = fixture_token;
    cfg.heartbeat_timeout = heartbeat_timeout;
    auto spawned = spawn_coordination_service(sys, cfg);
    ASSERT_TRUE(spawned) << describe(spawned.error());
    service = spawned->first;
    port = spawned->second;
  }

  void TearDown() override {
    caf::anon_send_exit(service, caf::exit_reason::user_shutdown);
    service = nullptr;
  }

  agent_config agent_cfg(int rank, uint32_t incarnation = 0) const {
    agent_config cfg;
    cfg.port = port;
    cfg.rank = rank;
    cfg.world_size = fixture_world_size;
    cfg.incarnation = incarnation;
    cfg.token = fixture_token;
    cfg.heartbeat_interval = fixture_heartbeat_interval;
    cfg.join_timeout = std::chrono::seconds(5);
    return cfg;
  }

  std::unique_ptr<coordination_client> join(int rank, uint32_t incarnation = 0) {
    auto client = coordination_client::connect(sys, agent_cfg(rank, incarnation));
    EXPECT_TRUE(client) << describe(client.error());
    return client ? std::move(*client) : nullptr;
  }

  system_config cfg_;
  caf::actor_system sys{cfg_};
  caf::actor service;
  uint16_t port = 0;
};

}  // namespace lifeboat::test
