#pragma once

// The coordination_state unit tests' fixture: the state of a service for four
// ranks, driven directly (no sockets, no clock), and helpers to join and to
// send requests.

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/coordination/coordination_auth.hpp"
#include "actors/coordination/coordination_state.hpp"

namespace lifeboat::test {

constexpr int64_t heartbeat_timeout_ms = 2000;
inline const std::string token = "secret";

class state_test : public ::testing::Test {
 protected:
  coordination_state st{{4, token, heartbeat_timeout_ms}};
  int64_t now = 1000;

  // Connects `conn` and joins it as `rank`; returns the JoinReply.
  wire::JoinReply join(conn_id conn, int32_t rank, uint32_t incarnation = 0,
                       const std::string& key = token, int32_t world_size = 4,
                       uint32_t version = coordination_protocol_version) {
    if (auto reply = send_join(conn, rank, incarnation, key, world_size, version)) return *reply;
    ADD_FAILURE() << "no join reply";
    return {};
  }

  // Connects `conn` and sends its join as `rank`: the JoinReply, or nullopt
  // while the service holds the join.
  std::optional<wire::JoinReply> send_join(conn_id conn, int32_t rank, uint32_t incarnation = 0,
                                           const std::string& key = token, int32_t world_size = 4,
                                           uint32_t version = coordination_protocol_version) {
    std::string nonce = "nonce-" + std::to_string(conn);
    st.on_connect(conn, nonce, now);
    auto hello = st.take_output();
    EXPECT_EQ(hello.frames.size(), 1u);
    EXPECT_EQ(hello.frames[0].second.hello().nonce(), nonce);
    wire::Envelope env;
    auto* j = env.mutable_join();
    j->set_protocol_version(version);
    j->set_rank(rank);
    j->set_world_size(world_size);
    j->set_incarnation(incarnation);
    j->set_mac(join_mac(key, nonce, rank, world_size, incarnation));
    j->set_nonce(worker_nonce);
    j->set_hang_timeout_ms(join_hang_timeout_ms);
    st.on_frame(conn, env, now);
    out = st.take_output();
    return join_reply_to(conn);
  }

  // The JoinReply sent to `conn` in the last output, if any.
  std::optional<wire::JoinReply> join_reply_to(conn_id conn) const {
    for (auto& [c, e] : out.frames)
      if (c == conn && e.has_join_reply()) return e.join_reply();
    return std::nullopt;
  }

  // The worker on `conn` leaves and closes its connection; `out` holds
  // what the service sent for both.
  void leave(conn_id conn) {
    wire::Envelope env;
    env.mutable_leave()->set_id(9);
    request(conn, env);
    st.on_disconnect(conn, now);
    auto closed = st.take_output();
    out.frames.insert(out.frames.end(), closed.frames.begin(), closed.frames.end());
  }

  // Lets `window_ms` pass, for the survivors to hear of the losses so far.
  void pass_loss_window(int64_t window_ms = closed_loss_window_ms) {
    now += window_ms;
    st.on_tick(now);
    out = st.take_output();
  }

  void join_all() {
    for (int32_t r = 0; r < 4; ++r) ASSERT_TRUE(join(r + 1, r).ok());
  }

  void request(conn_id conn, wire::Envelope env) {
    st.on_frame(conn, env, now);
    out = st.take_output();
  }

  // The Reply to `id` sent to `conn` in the last output, if any.
  std::optional<wire::Reply> reply_to(conn_id conn, uint64_t id) const {
    for (auto& [c, e] : out.frames)
      if (c == conn && e.has_reply() && e.reply().id() == id) return e.reply();
    return std::nullopt;
  }

  static wire::Envelope insert(uint64_t id, const std::string& key, const std::string& value) {
    wire::Envelope env;
    env.mutable_insert()->set_id(id);
    env.mutable_insert()->set_key(key);
    env.mutable_insert()->set_value(value);
    return env;
  }

  static wire::Envelope get(uint64_t id, const std::string& key, int64_t timeout_ms) {
    wire::Envelope env;
    env.mutable_get()->set_id(id);
    env.mutable_get()->set_key(key);
    env.mutable_get()->set_timeout_ms(timeout_ms);
    return env;
  }

  static wire::Envelope barrier(uint64_t id, const std::string& name, int64_t timeout_ms,
                                std::vector<int32_t> participants = {}) {
    wire::Envelope env;
    env.mutable_barrier()->set_id(id);
    env.mutable_barrier()->set_name(name);
    env.mutable_barrier()->set_timeout_ms(timeout_ms);
    for (auto p : participants) env.mutable_barrier()->add_participants(p);
    return env;
  }

  std::string state_of(int32_t rank) const { return st.workers(now)[rank].state(); }

  // The hang timeout every join of this fixture asks for (0: off).
  int64_t join_hang_timeout_ms = 0;

  // The challenge every join of this fixture sends the service.
  const std::string worker_nonce = std::string(coordination_nonce_bytes, 'w');

  coordination_output out;
};

}  // namespace lifeboat::test
