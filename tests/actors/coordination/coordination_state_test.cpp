// coordination_state's core: connections before the join, generations, process exits and reset.
#include "actors/coordination/coordination_state.hpp"

#include <gtest/gtest.h>

#include "tests/actors/coordination/state_fixture.hpp"

using namespace lifeboat;
using namespace lifeboat::test;

namespace {

TEST_F(state_test, request_before_join_closes_the_connection) {
  st.on_connect(7, "n", now);
  st.take_output();
  request(7, insert(1, "k", "v"));
  EXPECT_EQ(out.closes, std::vector<conn_id>{7});
  EXPECT_TRUE(st.snapshot("").empty());
}

TEST_F(state_test, higher_incarnation_starts_a_new_generation_and_stale_is_refused) {
  join_all();
  request(1, insert(1, "k", "v"));
  auto reply = join(10, 0, 1);
  EXPECT_TRUE(reply.ok());
  EXPECT_EQ(reply.generation(), 1u);
  EXPECT_EQ(st.generation(), 1u);
  EXPECT_TRUE(st.snapshot("").empty());
  // Every connection of the old generation is closed.
  for (conn_id c = 1; c <= 4; ++c)
    EXPECT_NE(std::find(out.closes.begin(), out.closes.end(), c), out.closes.end());
  EXPECT_EQ(state_of(1), "joining");
  auto stale = join(11, 1, 0);
  EXPECT_FALSE(stale.ok());
  EXPECT_NE(stale.message().find("stale"), std::string::npos);
}

// A subscriber that outlives a restart (the launcher) tells one generation's
// failures from the next one's by the generation on every event.
TEST_F(state_test, events_carry_the_generation_they_happened_in) {
  join_all();
  ASSERT_EQ(out.events.size(), 1u);
  EXPECT_EQ(out.events[0].generation, 0u);
  ASSERT_TRUE(join(10, 2, 3).ok());
  ASSERT_EQ(out.events.size(), 1u);
  EXPECT_EQ(out.events[0].kind, membership_event::joined);
  EXPECT_EQ(out.events[0].generation, 3u);
  wire::Envelope report;
  report.mutable_error()->set_code(42);
  report.mutable_error()->set_message("boom");
  request(10, report);
  ASSERT_EQ(out.events.size(), 1u);
  EXPECT_EQ(out.events[0].kind, membership_event::error);
  EXPECT_EQ(out.events[0].message, "boom");
  EXPECT_EQ(out.events[0].generation, 3u);
  ASSERT_TRUE(join(11, 0, 3).ok());
  st.on_disconnect(11, now);
  out = st.take_output();
  ASSERT_EQ(out.events.size(), 1u);
  EXPECT_EQ(out.events[0].kind, membership_event::lost);
  EXPECT_EQ(out.events[0].generation, 3u);
  for (auto& e : st.present_workers()) EXPECT_EQ(e.generation, 3u);
  EXPECT_EQ(st.present_workers().size(), 1u);
}

// A launcher reports a worker's process that ended before it joined: no
// connection of its would ever close, so without the report the peers would
// wait for it in their barriers until a timeout.
TEST_F(state_test, a_process_that_ended_before_it_joined_is_lost_at_once) {
  for (int32_t r = 0; r < 3; ++r) ASSERT_TRUE(join(r + 1, r).ok());
  request(1, barrier(5, "start", 60'000));
  EXPECT_FALSE(reply_to(1, 5));
  st.on_process_exit(3, 0, "(pid 42) exited with code 7", now);
  out = st.take_output();
  EXPECT_EQ(state_of(3), "lost");
  ASSERT_EQ(out.events.size(), 1u);
  EXPECT_EQ(out.events[0].kind, membership_event::lost);
  EXPECT_EQ(out.events[0].generation, 0u);
  // The survivors hear of it once the losses that come with it are in.
  EXPECT_FALSE(reply_to(1, 5));
  pass_loss_window();
  auto failed = reply_to(1, 5);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->error_code(), static_cast<uint32_t>(errc::peer_lost));
  EXPECT_NE(failed->error_message().find("rank 3 lost: its process (pid 42) exited with code 7 "
                                         "before it joined"),
            std::string::npos)
      << failed->error_message();
  int told = 0;
  for (auto& [c, e] : out.frames)
    if (e.has_failure() && e.failure().rank() == 3 && e.failure().lost()) ++told;
  EXPECT_EQ(told, 3);
  // A barrier that starts later fails at once too.
  request(2, barrier(6, "restore", 60'000));
  ASSERT_TRUE(reply_to(2, 6));
  EXPECT_EQ(reply_to(2, 6)->error_code(), static_cast<uint32_t>(errc::peer_lost));
}

// A joined worker's end is its connection's to tell (a clean leave stays a
// leave), and a report from an older generation changes nothing.
TEST_F(state_test, a_process_exit_changes_only_a_rank_that_never_joined_in_its_generation) {
  ASSERT_TRUE(join(1, 0, 1).ok());
  st.on_process_exit(0, 1, "(pid 40) was killed by SIGTERM", now);
  st.on_process_exit(1, 0, "(pid 41) was killed by SIGTERM", now);
  out = st.take_output();
  EXPECT_EQ(state_of(0), "alive");
  EXPECT_EQ(state_of(1), "joining");
  EXPECT_TRUE(out.events.empty());
  EXPECT_TRUE(out.frames.empty());
  // One of a newer generation starts it, as its first join would.
  st.on_process_exit(1, 2, "(pid 51) exited with code 1", now);
  out = st.take_output();
  EXPECT_EQ(st.generation(), 2u);
  EXPECT_EQ(state_of(0), "joining");
  EXPECT_EQ(state_of(1), "lost");
  EXPECT_EQ(out.closes, std::vector<conn_id>{1});
}

TEST_F(state_test, reset_drops_everything) {
  join_all();
  request(1, insert(1, "k", "v"));
  request(2, get(2, "other", 1000));
  st.reset();
  out = st.take_output();
  EXPECT_EQ(reply_to(2, 2)->error_code(), static_cast<uint32_t>(errc::cancelled));
  EXPECT_EQ(out.closes.size(), 4u);
  EXPECT_TRUE(st.snapshot("").empty());
  EXPECT_EQ(state_of(0), "joining");
  EXPECT_FALSE(st.next_deadline_ms());
}

}  // namespace
