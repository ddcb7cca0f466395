// coordination_state's defences against peers that do not play by the
// protocol: the handshake's proofs and the bounds on what a connection may
// hold (actors/connection_limits).

#include <gtest/gtest.h>

#include "actors/coordination/coordination_auth.hpp"
#include "actors/coordination/coordination_state.hpp"
#include "tests/actors/coordination/state_fixture.hpp"

using namespace lifeboat;
using namespace lifeboat::test;

namespace {

TEST_F(state_test, an_accepted_join_carries_the_services_proof) {
  auto reply = join(1, 2, 3);
  ASSERT_TRUE(reply.ok());
  EXPECT_TRUE(mac_equal(reply.proof(), service_proof(token, worker_nonce, 2, 4, 3)));
  EXPECT_FALSE(mac_equal(reply.proof(), service_proof("wrong", worker_nonce, 2, 4, 3)));
}

TEST_F(state_test, a_join_without_the_workers_challenge_is_refused) {
  st.on_connect(1, "nonce-1", now);
  st.take_output();
  wire::Envelope env;
  auto* j = env.mutable_join();
  j->set_protocol_version(coordination_protocol_version);
  j->set_world_size(4);
  j->set_mac(join_mac(token, "nonce-1", 0, 4, 0));
  st.on_frame(1, env, now);
  out = st.take_output();
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_FALSE(out.frames[0].second.join_reply().ok());
  EXPECT_NE(out.frames[0].second.join_reply().message().find("challenge"), std::string::npos);
  EXPECT_EQ(out.closes, std::vector<conn_id>{1});
}

// Connects `conn` without joining; true when it was greeted (not refused at accept).
bool connect_only(coordination_state& st, conn_id conn, int64_t now) {
  st.on_connect(conn, "nonce", now);
  auto out = st.take_output();
  return out.closes.empty() && out.frames.size() == 1u && out.frames[0].second.has_hello();
}

TEST_F(state_test, a_connection_not_joined_within_the_bound_is_closed) {
  ASSERT_TRUE(connect_only(st, 1, now));
  EXPECT_EQ(st.next_deadline_ms(), now + unjoined_connection_bound_ms);
  st.on_tick(now + unjoined_connection_bound_ms - 1);
  EXPECT_TRUE(st.take_output().closes.empty());
  st.on_tick(now + unjoined_connection_bound_ms);
  EXPECT_EQ(st.take_output().closes, std::vector<conn_id>{1});
  EXPECT_EQ(st.connections(), 0u);
  EXPECT_FALSE(st.next_deadline_ms());
}

TEST_F(state_test, connections_beyond_the_unjoined_limit_are_closed_at_accept) {
  // A joined connection does not count.
  ASSERT_TRUE(join(2000, 0).ok());
  for (conn_id c = 1; c <= static_cast<conn_id>(max_unjoined_connections); ++c)
    ASSERT_TRUE(connect_only(st, c, now));
  EXPECT_FALSE(connect_only(st, 1000, now));
  EXPECT_EQ(st.connections(), max_unjoined_connections + 1);
  // One that leaves makes room for the next.
  st.on_disconnect(1, now);
  st.take_output();
  EXPECT_TRUE(connect_only(st, 1001, now));
  EXPECT_FALSE(connect_only(st, 1002, now));
}

TEST_F(state_test, a_request_before_the_join_frees_its_unjoined_slot) {
  for (conn_id c = 1; c <= static_cast<conn_id>(max_unjoined_connections); ++c)
    ASSERT_TRUE(connect_only(st, c, now));
  request(1, insert(1, "k", "v"));
  EXPECT_EQ(out.closes, std::vector<conn_id>{1});
  EXPECT_TRUE(connect_only(st, 1000, now));
}

TEST_F(state_test, blocking_requests_beyond_the_limit_fail_with_invalid_argument) {
  ASSERT_TRUE(join(1, 0).ok());
  ASSERT_TRUE(join(2, 1).ok());
  auto limit = static_cast<uint64_t>(max_pending_requests_per_connection);
  for (uint64_t id = 1; id < limit; ++id) {
    request(1, get(id, "absent/" + std::to_string(id), 60000));
    ASSERT_FALSE(reply_to(1, id)) << id;
  }
  request(1, barrier(limit, "b", 60000, {0, 1}));
  EXPECT_FALSE(reply_to(1, limit));
  request(1, get(limit + 1, "one/too/many", 60000));
  auto refused = reply_to(1, limit + 1);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->error_code(), static_cast<uint32_t>(errc::invalid_argument));
  request(1, barrier(limit + 2, "c", 60000, {0, 1}));
  ASSERT_TRUE(reply_to(1, limit + 2));
  EXPECT_EQ(reply_to(1, limit + 2)->error_code(), static_cast<uint32_t>(errc::invalid_argument));
  // Another connection has its own budget, and a completed request frees one.
  request(2, barrier(1, "b", 60000, {0, 1}));
  EXPECT_EQ(reply_to(1, limit)->error_code(), 0u);
  request(1, get(limit + 3, "now/fits", 60000));
  EXPECT_FALSE(reply_to(1, limit + 3));
}

}  // namespace
