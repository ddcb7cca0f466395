// The coordination connections end to end, through a proxy on 127.0.0.1
// that records and may tamper with what it forwards: with TLS on, no frame's
// payload crosses in clear text, and a flipped byte ends the connection (the
// worker is lost, by rank) instead of delivering a forged message. A broker
// sends on its connection's own socket, and bytes that socket does not take
// go through the broker without changing the order; frames queued wait for
// the flush, and a frame sent meanwhile follows them.
#include "actors/coordination/frame_stream.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include <caf/io/broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/coordination/coordination_client.hpp"
#include "actors/coordination/coordination_service.hpp"
#include "actors/system_config.hpp"
#include "messages/errors.hpp"
#include "tests/actors/coordination/tcp_proxy.hpp"
#include "tests/actors/coordination/tls_certificates.hpp"
#include "tests/support/loopback_port.hpp"

#include <gtest/gtest.h>

using namespace lifeboat;
using namespace lifeboat::test;

namespace {

using namespace std::chrono_literals;

const std::string token = "frame-stream-test-token";
constexpr int world_size = 2;
constexpr int proxied_rank = 1;
constexpr auto event_bound = 10s;
const std::string probe_key = "lifeboat/probe/clear-text-key";
const std::string probe_value = "agreed-step-7f3a9c-value";

tls_config psk_tls() {
  tls_config cfg;
  cfg.enabled = true;
  return cfg;
}

caf::expected<std::pair<caf::actor, uint16_t>> spawn_service(caf::actor_system& sys,
                                                             const tls_config& tls) {
  service_config cfg;
  cfg.world_size = world_size;
  cfg.token = token;
  cfg.tls = tls;
  return spawn_coordination_service(sys, cfg);
}

// The proxied rank's agent, joining at `port`.
agent_config agent_at(uint16_t port, const tls_config& tls, const std::string& agent_token) {
  agent_config cfg;
  cfg.port = port;
  cfg.rank = proxied_rank;
  cfg.world_size = world_size;
  cfg.token = agent_token;
  cfg.tls = tls;
  cfg.heartbeat_interval = 100ms;
  cfg.join_timeout = event_bound;
  return cfg;
}

class frame_stream_test : public ::testing::Test {
 protected:
  void start(const tls_config& tls) {
    auto spawned = spawn_service(sys, tls);
    ASSERT_TRUE(spawned) << describe(spawned.error());
    service = spawned->first;
    proxy = std::make_unique<tcp_proxy>(spawned->second);
    ASSERT_NE(proxy->port(), 0);
    self->send(service, subscribe_atom::value, caf::actor{self});
    auto joined = coordination_client::connect(sys, agent_at(proxy->port(), tls, token));
    ASSERT_TRUE(joined) << describe(joined.error());
    client = std::move(*joined);
    expect_event(membership_event::joined);
  }

  void TearDown() override {
    client.reset();
    if (service) caf::anon_send_exit(service, caf::exit_reason::user_shutdown);
  }

  // The next membership event is of `kind` and names the proxied rank.
  void expect_event(int32_t kind) {
    self->receive(
        [kind](const membership_event& ev) {
          EXPECT_EQ(ev.kind, kind) << ev.message;
          EXPECT_EQ(ev.rank, proxied_rank) << ev.message;
        },
        caf::after(event_bound) >> [] { ADD_FAILURE() << "no membership event"; });
  }

  std::map<std::string, std::string> service_keys() {
    std::map<std::string, std::string> out;
    self->request(service, event_bound, snapshot_atom::value, std::string{})
        .receive([&out](std::map<std::string, std::string>& kv) { out = std::move(kv); },
                 [](caf::error& err) { ADD_FAILURE() << describe(err); });
    return out;
  }

  system_config cfg_;
  caf::actor_system sys{cfg_};
  caf::scoped_actor self{sys};
  caf::actor service;
  std::unique_ptr<tcp_proxy> proxy;
  std::unique_ptr<coordination_client> client;
};

TEST_F(frame_stream_test, without_tls_a_capture_sees_the_payload) {
  start(tls_config{});
  ASSERT_FALSE(client->insert(probe_key, probe_value));
  auto seen = proxy->recorded();
  EXPECT_NE(seen.find(probe_value), std::string::npos);
  EXPECT_NE(seen.find(probe_key), std::string::npos);
}

TEST_F(frame_stream_test, with_tls_no_payload_travels_in_clear_text) {
  start(psk_tls());
  ASSERT_FALSE(client->insert(probe_key, probe_value));
  EXPECT_EQ(service_keys()[probe_key], probe_value);
  auto seen = proxy->recorded();
  EXPECT_GT(seen.size(), probe_value.size());
  EXPECT_EQ(seen.find(probe_value), std::string::npos) << "the value crossed in clear text";
  EXPECT_EQ(seen.find(probe_key), std::string::npos) << "the key crossed in clear text";
  EXPECT_EQ(seen.find(token), std::string::npos) << "the token crossed in clear text";
}

TEST_F(frame_stream_test, with_certificates_no_payload_travels_in_clear_text) {
  tls_certificates certs;
  ASSERT_EQ(certs.error(), "");
  start(certs.config());
  ASSERT_FALSE(client->insert(probe_key, probe_value));
  auto seen = proxy->recorded();
  EXPECT_EQ(seen.find(probe_value), std::string::npos) << "the value crossed in clear text";
}

TEST_F(frame_stream_test, a_flipped_byte_after_the_join_loses_the_worker_and_forges_nothing) {
  start(psk_tls());
  proxy->flip_next_upstream_byte();
  // The insert, or a heartbeat before it, carries the flipped byte.
  auto err = client->insert(probe_key, probe_value);
  expect_event(membership_event::lost);
  EXPECT_TRUE(proxy->flipped());
  EXPECT_EQ(service_keys().count(probe_key), 0u) << "a tampered frame was accepted";
  // The worker hears that it lost the service, and its requests fail.
  if (!err) err = client->insert(probe_key + "/again", probe_value);
  EXPECT_TRUE(err);
}

// A worker whose join a service of `service_tls` must refuse at once, with
// an error that names TLS.
void expect_refused(caf::actor_system& sys, const tls_config& service_tls,
                    const tls_config& agent_tls, const std::string& agent_token) {
  auto spawned = spawn_service(sys, service_tls);
  ASSERT_TRUE(spawned) << describe(spawned.error());
  auto started = std::chrono::steady_clock::now();
  auto joined =
      coordination_client::connect(sys, agent_at(spawned->second, agent_tls, agent_token));
  caf::anon_send_exit(spawned->first, caf::exit_reason::user_shutdown);
  ASSERT_FALSE(joined);
  EXPECT_EQ(joined.error(), make_error(errc::refused)) << describe(joined.error());
  EXPECT_NE(describe(joined.error()).find("TLS"), std::string::npos) << describe(joined.error());
  EXPECT_LT(std::chrono::steady_clock::now() - started, event_bound / 2);
}

TEST_F(frame_stream_test, a_worker_of_another_token_fails_the_handshake_and_is_refused) {
  expect_refused(sys, psk_tls(), psk_tls(), "another-job-token");
}

TEST_F(frame_stream_test, a_worker_with_tls_refuses_a_service_without_it) {
  expect_refused(sys, tls_config{}, psk_tls(), token);
}

using queue_atom = caf::atom_constant<caf::atom("queue")>;
using flush_atom = caf::atom_constant<caf::atom("flush")>;

// A broker connected to `port` that sends on request through a frame_stream.
struct sender_state {
  caf::io::connection_handle hdl;
  frame_stream stream;
  size_t offset = 0;  // bytes given to the stream so far
};

using sender_broker = caf::io::stateful_broker<sender_state>;

// The next `bytes` bytes of the stream: each byte its offset in the whole
// stream (mod 251).
std::vector<char> next_piece(sender_broker* self, int32_t bytes) {
  std::vector<char> out(static_cast<size_t>(bytes));
  for (auto& b : out) b = static_cast<char>(self->state.offset++ % 251);
  return out;
}

caf::behavior sending_broker(sender_broker* self, uint16_t port) {
  auto hdl = self->add_tcp_scribe("127.0.0.1", port);
  if (!hdl) return {};
  self->state.hdl = *hdl;
  return {
      // Sends `count` pieces of `bytes` bytes; the socket the stream found
      // for the connection.
      [self](int32_t count, int32_t bytes) {
        for (int32_t piece = 0; piece < count; ++piece)
          self->state.stream.send(self, self->state.hdl, next_piece(self, bytes));
        return connection_socket(self, self->state.hdl);
      },
      // Queues `count` pieces of `bytes` bytes; whether the stream holds them.
      [self](queue_atom, int32_t count, int32_t bytes) {
        for (int32_t piece = 0; piece < count; ++piece)
          self->state.stream.queue(next_piece(self, bytes));
        return self->state.stream.has_queued();
      },
      [self](flush_atom) {
        self->state.stream.flush(self, self->state.hdl);
        return self->state.stream.has_queued();
      },
      // The socket found for a handle numbered `fd` that is not the broker's.
      [self](int32_t fd) {
        return connection_socket(self, caf::io::connection_handle::from_int(fd));
      },
  };
}

class frame_stream_socket_test : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(listener.port(), 0);
    broker = sys.middleman().spawn_broker(sending_broker, listener.port());
    peer = ::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC);
    ASSERT_GE(peer, 0);
  }

  void TearDown() override {
    caf::anon_send_exit(broker, caf::exit_reason::user_shutdown);
    if (peer >= 0) ::close(peer);
  }

  // Reads `total` bytes from the peer, each its offset (from `from`) in the
  // whole stream, mod 251.
  void expect_stream(size_t total, size_t from = 0) {
    timeval bound{static_cast<time_t>(event_bound.count()), 0};
    ::setsockopt(peer, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof(bound));
    std::vector<char> buffer(64 * 1024);
    size_t offset = 0, wrong = 0;
    while (offset < total) {
      auto n = ::recv(peer, buffer.data(), std::min(buffer.size(), total - offset), 0);
      ASSERT_GT(n, 0) << "the stream ended after " << offset << " of " << total << " bytes";
      for (ssize_t i = 0; i < n; ++i)
        if (buffer[static_cast<size_t>(i)] !=
            static_cast<char>((from + offset + static_cast<size_t>(i)) % 251))
          ++wrong;
      offset += static_cast<size_t>(n);
    }
    EXPECT_EQ(wrong, 0u);
  }

  system_config cfg_;
  caf::actor_system sys{cfg_};
  caf::scoped_actor self{sys};
  test::held_port listener;
  caf::actor broker;
  int peer = -1;
};

TEST_F(frame_stream_socket_test, a_broker_connection_sends_on_its_own_socket) {
  int found = -2;
  self->request(broker, event_bound, int32_t{1}, int32_t{16})
      .receive([&](int fd) { found = fd; },
               [](caf::error& err) { ADD_FAILURE() << describe(err); });
  ASSERT_GE(found, 0) << "no socket for the broker's own connection";
  // The broker's end of the connection that this test accepted.
  sockaddr_in broker_end{}, found_end{};
  socklen_t len = sizeof(broker_end);
  ASSERT_EQ(::getpeername(peer, reinterpret_cast<sockaddr*>(&broker_end), &len), 0);
  len = sizeof(found_end);
  ASSERT_EQ(::getsockname(found, reinterpret_cast<sockaddr*>(&found_end), &len), 0);
  EXPECT_EQ(found_end.sin_port, broker_end.sin_port);
  // A socket of this process that is not the broker's connection.
  int other = -2;
  self->request(broker, event_bound, int32_t{peer})
      .receive([&](int fd) { other = fd; },
               [](caf::error& err) { ADD_FAILURE() << describe(err); });
  EXPECT_EQ(other, -1);
}

TEST_F(frame_stream_socket_test,
       what_the_socket_does_not_take_follows_in_order_through_the_broker) {
  // Far more than the socket buffers hold while this end reads nothing: the
  // socket takes the first pieces, the broker's buffer the rest.
  constexpr int32_t pieces = 64;
  constexpr int32_t piece_bytes = 256 * 1024;
  int found = -2;
  self->request(broker, event_bound, pieces, piece_bytes)
      .receive([&](int fd) { found = fd; },
               [](caf::error& err) { ADD_FAILURE() << describe(err); });
  ASSERT_GE(found, 0);
  expect_stream(static_cast<size_t>(pieces) * piece_bytes);
}

TEST_F(frame_stream_socket_test, queued_frames_wait_for_the_flush_and_keep_their_order) {
  bool held = false;
  self->request(broker, event_bound, queue_atom::value, int32_t{3}, int32_t{100})
      .receive([&](bool queued) { held = queued; },
               [](caf::error& err) { ADD_FAILURE() << describe(err); });
  EXPECT_TRUE(held);
  // The broker answered after queueing: had it written, loopback TCP would
  // hold the bytes for this end already.
  char byte = 0;
  EXPECT_EQ(::recv(peer, &byte, 1, MSG_DONTWAIT), -1) << "a queued frame went out";
  self->request(broker, event_bound, flush_atom::value)
      .receive([&](bool queued) { held = queued; },
               [](caf::error& err) { ADD_FAILURE() << describe(err); });
  EXPECT_FALSE(held);
  expect_stream(300);
  // A frame sent while others are queued goes out after them, with them.
  self->request(broker, event_bound, queue_atom::value, int32_t{2}, int32_t{1000})
      .receive([](bool) {}, [](caf::error& err) { ADD_FAILURE() << describe(err); });
  self->request(broker, event_bound, int32_t{1}, int32_t{50})
      .receive([](int) {}, [](caf::error& err) { ADD_FAILURE() << describe(err); });
  expect_stream(2050, 300);
}

}  // namespace
