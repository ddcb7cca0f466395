// deadline_floor, and how the coordination state uses it: one heartbeat
// sweep when the oldest heartbeat may be overdue, a bound on the requests'
// deadlines, and broadcasts marked for encoding once.
#include "actors/coordination/deadline_floor.hpp"

#include <gtest/gtest.h>

#include "tests/actors/coordination/state_fixture.hpp"

namespace lifeboat::test {
namespace {

TEST(deadline_floor, adding_lowers_the_bound_and_only_a_reset_raises_it) {
  deadline_floor floor;
  EXPECT_FALSE(floor.due_ms());
  EXPECT_FALSE(floor.reached(1 << 30));
  floor.lower_to(500);
  floor.lower_to(700);
  EXPECT_EQ(floor.due_ms(), 500);
  EXPECT_FALSE(floor.reached(499));
  EXPECT_TRUE(floor.reached(500));
  floor.reset(900);
  EXPECT_EQ(floor.due_ms(), 900);
  floor.reset();
  EXPECT_FALSE(floor.due_ms());
}

TEST_F(state_test, a_sweep_that_loses_nobody_is_next_due_at_the_oldest_heartbeat) {
  join_all();
  EXPECT_EQ(st.next_deadline_ms(), now + heartbeat_timeout_ms);
  // Ranks 0..2 beat at +100, rank 3 at +300; the first sweep loses nobody
  // and is next due when rank 0's heartbeat is overdue.
  wire::Envelope hb;
  hb.mutable_heartbeat()->set_step(1);
  auto start = now;
  now = start + 100;
  for (conn_id c = 1; c <= 3; ++c) request(c, hb);
  now = start + 300;
  request(4, hb);
  now = start + heartbeat_timeout_ms;
  st.on_tick(now);
  out = st.take_output();
  EXPECT_TRUE(out.closes.empty());
  EXPECT_EQ(st.next_deadline_ms(), start + 100 + heartbeat_timeout_ms);
  // Only rank 3 keeps beating: 0..2 are lost at their own deadline.
  now = start + heartbeat_timeout_ms + 50;
  request(4, hb);
  now = start + 100 + heartbeat_timeout_ms;
  st.on_tick(now);
  out = st.take_output();
  EXPECT_EQ(state_of(0), "lost");
  EXPECT_EQ(state_of(2), "lost");
  EXPECT_EQ(state_of(3), "alive");
  // The survivors hear of the losses one heartbeat interval later; then the
  // next due is rank 3's heartbeat.
  auto report_due = now + heartbeat_timeout_ms / heartbeats_per_timeout;
  EXPECT_EQ(st.next_deadline_ms(), report_due);
  now = report_due;
  st.on_tick(now);
  EXPECT_EQ(st.next_deadline_ms(), start + heartbeat_timeout_ms + 50 + heartbeat_timeout_ms);
}

TEST_F(state_test, a_broadcast_is_one_run_of_identical_frames) {
  join_all();
  wire::Envelope send;
  send.mutable_send()->set_to_rank(every_rank);
  send.mutable_send()->set_channel("c");
  send.mutable_send()->set_payload("p");
  request(1, send);
  ASSERT_EQ(out.frames.size(), 4u);
  ASSERT_EQ(out.broadcasts.size(), 1u);
  EXPECT_EQ(out.broadcasts[0].first, 0u);
  EXPECT_EQ(out.broadcasts[0].count, 4u);
  for (auto& [conn, env] : out.frames) EXPECT_EQ(env.delivery().payload(), "p");
}

}  // namespace
}  // namespace lifeboat::test
