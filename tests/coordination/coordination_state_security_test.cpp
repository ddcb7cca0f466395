// coordination_state's defences against peers that do not play by the
// protocol: the handshake's proofs and the bounds on what a connection may
// hold (actors/connection_limits).

#include <gtest/gtest.h>

#include "actors/coordination_auth.hpp"
#include "actors/coordination_state.hpp"
#include "tests/coordination/state_fixture.hpp"

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

}  // namespace
