// coordination_state's messages to many ranks: failures and peer messages.
#include "actors/coordination/coordination_state.hpp"

#include <gtest/gtest.h>

#include "tests/actors/coordination/state_fixture.hpp"

using namespace lifeboat;
using namespace lifeboat::test;

namespace {

TEST_F(state_test, error_report_is_broadcast_and_fails_barriers) {
  join_all();
  request(1, barrier(1, "b", 10000));
  wire::Envelope report;
  report.mutable_error()->set_code(42);
  report.mutable_error()->set_message("boom");
  request(2, report);
  int failures = 0;
  for (auto& [c, e] : out.frames) {
    if (!e.has_failure()) continue;
    ++failures;
    EXPECT_EQ(e.failure().rank(), 1);
    EXPECT_EQ(e.failure().code(), 42);
    EXPECT_FALSE(e.failure().lost());
  }
  EXPECT_EQ(failures, 4);
  EXPECT_EQ(reply_to(1, 1)->error_code(), static_cast<uint32_t>(errc::peer_error));
  EXPECT_EQ(state_of(1), "error");
}

TEST_F(state_test, peer_messages_reach_one_rank_everyone_or_everyone_else) {
  join_all();
  wire::Envelope send;
  send.mutable_send()->set_to_rank(2);
  send.mutable_send()->set_channel("preempt");
  send.mutable_send()->set_payload("p");
  request(1, send);
  ASSERT_EQ(out.frames.size(), 1u);
  EXPECT_EQ(out.frames[0].first, 3);
  EXPECT_EQ(out.frames[0].second.delivery().from_rank(), 0);
  send.mutable_send()->set_to_rank(every_rank);
  request(1, send);
  EXPECT_EQ(out.frames.size(), 4u);
  send.mutable_send()->set_to_rank(every_other_rank);
  request(2, send);  // from rank 1
  ASSERT_EQ(out.frames.size(), 3u);
  for (auto& [conn, env] : out.frames) {
    EXPECT_NE(conn, 2) << "the sender gets no copy";
    EXPECT_EQ(env.delivery().from_rank(), 1);
  }
}

}  // namespace
