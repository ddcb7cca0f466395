// coordination_state's barriers.
#include "actors/coordination/coordination_state.hpp"

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "tests/actors/coordination/state_fixture.hpp"

using namespace lifeboat;
using namespace lifeboat::test;

namespace {

TEST_F(state_test, barrier_releases_everyone_when_the_last_arrives) {
  join_all();
  for (int32_t r = 0; r < 3; ++r) {
    request(r + 1, barrier(1, "b", 1000));
    EXPECT_TRUE(out.frames.empty());
  }
  request(4, barrier(1, "b", 1000));
  for (conn_id c = 1; c <= 4; ++c) EXPECT_EQ(reply_to(c, 1)->error_code(), 0u);
}

// A barrier that times out names who did not come, and which of them never
// joined (a worker that has not constructed its handler): "timeout" alone
// left a user to guess after two minutes. Arrivals that time out together
// are not named as absent to each other.
TEST_F(state_test, a_barrier_that_times_out_names_who_did_not_arrive) {
  for (int32_t r = 0; r < 3; ++r) ASSERT_TRUE(join(r + 1, r).ok());
  request(1, barrier(1, "b", 1000));
  request(2, barrier(1, "b", 1000));
  now += 1001;  // a timeout is over once it has passed (deadline_floor.hpp)
  st.on_tick(now);
  out = st.take_output();
  for (conn_id c : {1, 2}) {
    auto r = reply_to(c, 1);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->error_code(), static_cast<uint32_t>(errc::timeout));
    EXPECT_EQ(r->error_message(),
              "barrier b: ranks 2, 3 did not arrive (rank 3 never joined: its worker has not "
              "constructed a handler, or cannot reach the coordination service)");
  }
}

// A barrier whose absent participants can only be stuck (lifeboat's save_fn
// barrier: each rank arrives once its own save ends) names them as hung at
// its timeout, as a failure of theirs that every worker hears and that fails
// the barrier for those waiting. Before, each waiting rank raised a failure
// of its own with no origin. A participant that never joined is no hang.
TEST_F(state_test, an_absent_hung_barrier_declares_the_absent_joined_rank_hung_at_its_timeout) {
  for (int32_t r = 0; r < 3; ++r) ASSERT_TRUE(join(r + 1, r).ok());  // rank 3 never joins
  auto hung_barrier = barrier(1, "save", 1000, {0, 1, 2, 3});
  hung_barrier.mutable_barrier()->set_absent_hung(true);
  request(1, hung_barrier);
  now += 1001;
  st.on_tick(now);
  out = st.take_output();
  auto r = reply_to(1, 1);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->error_code(), static_cast<uint32_t>(errc::peer_error));
  EXPECT_EQ(r->error_message(),
            "barrier save: rank 1 failed: hang: did not arrive at barrier save in 1 s, where rank "
            "0 waited");
  int failures = 0;
  for (auto& [conn, e] : out.frames) {
    if (!e.has_failure()) continue;
    ++failures;
    EXPECT_EQ(e.failure().rank(), 1);
    EXPECT_EQ(e.failure().code(), static_cast<int32_t>(errc::hung));
  }
  EXPECT_EQ(failures, 3);
  EXPECT_EQ(state_of(1), "error");
  EXPECT_EQ(state_of(2), "alive");
}

TEST_F(state_test, an_absent_hung_barrier_missing_only_a_rank_that_never_joined_times_out) {
  for (int32_t r = 0; r < 3; ++r) ASSERT_TRUE(join(r + 1, r).ok());  // rank 3 never joins
  auto hung_barrier = barrier(1, "save", 1000);
  hung_barrier.mutable_barrier()->set_absent_hung(true);
  for (conn_id c = 1; c <= 3; ++c) request(c, hung_barrier);
  now += 1001;
  st.on_tick(now);
  out = st.take_output();
  for (conn_id c = 1; c <= 3; ++c) {
    auto r = reply_to(c, 1);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->error_code(), static_cast<uint32_t>(errc::timeout));
  }
  for (auto& [conn, e] : out.frames) EXPECT_FALSE(e.has_failure());
}

// A barrier left open says whom it waits for at 10 s, and again each time
// it has been open twice as long: a wait told once said nothing later of who
// was still missing.
TEST_F(state_test, a_barrier_left_open_says_whom_it_waits_for_at_10_20_and_40_s) {
  for (int32_t r = 0; r < 3; ++r) ASSERT_TRUE(join(r + 1, r).ok());  // rank 3 never joins
  request(1, barrier(1, "b", 100000));
  auto opened = now;
  std::map<int64_t, std::string> told;  // by whole seconds open
  for (int64_t s = 1; s <= 50; ++s) {
    now = opened + s * 1000;
    for (conn_id c = 1; c <= 3; ++c) {
      wire::Envelope hb;
      hb.mutable_heartbeat()->set_step(1);
      request(c, hb);
    }
    if (s == 15) request(2, barrier(1, "b", 100000));
    testing::internal::CaptureStderr();
    st.on_tick(now);
    auto text = testing::internal::GetCapturedStderr();
    if (!text.empty()) told[s] = text;
  }
  ASSERT_EQ(told.size(), 3u);
  auto never_joined =
      " (rank 3 never joined: its worker has not constructed a handler, or cannot "
      "reach the coordination service)\n";
  EXPECT_NE(told[10].find("barrier b open for 10 s, waiting for ranks 1, 2, 3" +
                          std::string{never_joined}),
            std::string::npos)
      << told[10];
  EXPECT_NE(
      told[20].find("barrier b open for 20 s, waiting for ranks 2, 3" + std::string{never_joined}),
      std::string::npos)
      << told[20];
  EXPECT_NE(told[40].find("barrier b open for 40 s, waiting for ranks 2, 3"), std::string::npos)
      << told[40];
}

TEST_F(state_test, barrier_with_participants_ignores_others) {
  join_all();
  request(1, barrier(1, "pair", 1000, {0, 2}));
  request(3, barrier(1, "pair", 1000, {2, 0}));
  EXPECT_EQ(reply_to(1, 1)->error_code(), 0u);
  EXPECT_EQ(reply_to(3, 1)->error_code(), 0u);
  request(2, barrier(2, "pair2", 1000, {0, 2}));
  EXPECT_EQ(reply_to(2, 2)->error_code(), static_cast<uint32_t>(errc::invalid_argument));
}

// An arrival that names the participants exactly as the first did reuses
// the first's checked list: it is still checked for itself, and one that
// names others is still refused.
TEST_F(state_test, a_barrier_checks_every_arrival_against_the_first_ones_participants) {
  join_all();
  request(1, barrier(1, "b", 1000, {2, 0}));
  request(2, barrier(1, "b", 1000, {2, 0}));
  EXPECT_EQ(reply_to(2, 1)->error_code(), static_cast<uint32_t>(errc::invalid_argument));
  request(3, barrier(1, "b", 1000, {0, 1, 2}));
  EXPECT_EQ(reply_to(3, 1)->error_code(), static_cast<uint32_t>(errc::invalid_argument));
  EXPECT_FALSE(reply_to(1, 1)) << "rank 0 waits for rank 2";
  request(3, barrier(2, "b", 1000, {2, 0}));
  EXPECT_EQ(reply_to(1, 1)->error_code(), 0u);
  EXPECT_EQ(reply_to(3, 2)->error_code(), 0u);
}

TEST_F(state_test, barrier_fails_for_everyone_when_a_participant_is_lost) {
  join_all();
  request(1, barrier(1, "b", 10000));
  request(2, barrier(1, "b", 10000));
  st.on_disconnect(4, now);
  pass_loss_window();
  for (conn_id c : {1, 2}) {
    auto r = reply_to(c, 1);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->error_code(), static_cast<uint32_t>(errc::peer_lost));
    EXPECT_NE(r->error_message().find("rank 3"), std::string::npos);
  }
  // A later arrival fails at once.
  request(3, barrier(2, "b", 10000));
  EXPECT_EQ(reply_to(3, 2)->error_code(), static_cast<uint32_t>(errc::peer_lost));
}

// A launcher killed outright: its ranks' connections close a moment apart.
// An arrival meanwhile, or a survivor that gives up and leaves, fails no
// barrier naming one rank alone: the report of the losses fails it, naming
// both.
TEST_F(state_test, a_barrier_waits_for_the_report_of_a_loss_and_names_every_rank_lost) {
  join_all();
  request(1, barrier(1, "b", 10000));
  st.on_disconnect(3, now);  // rank 2
  out = st.take_output();
  request(2, barrier(1, "b", 10000));
  EXPECT_FALSE(reply_to(2, 1));
  wire::Envelope leave;
  leave.mutable_leave()->set_id(9);
  now += 5;
  st.on_disconnect(4, now);  // rank 3
  out = st.take_output();
  request(1, leave);
  EXPECT_FALSE(reply_to(1, 1));
  pass_loss_window();
  auto r = reply_to(2, 1);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->error_code(), static_cast<uint32_t>(errc::peer_lost));
  EXPECT_NE(r->error_message().find("(lost together: rank 2, rank 3)"), std::string::npos)
      << r->error_message();
}

// Workers leave when they give up after a peer's failure: a barrier that
// finds both names the lost rank, where the failure began, not the first
// rank that left.
TEST_F(state_test, a_barrier_names_a_lost_participant_before_one_that_left) {
  join_all();
  wire::Envelope leave;
  leave.mutable_leave()->set_id(9);
  request(1, leave);
  st.on_disconnect(1, now);
  st.on_disconnect(3, now);
  pass_loss_window();
  request(4, barrier(1, "b", 10000));
  auto r = reply_to(4, 1);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->error_code(), static_cast<uint32_t>(errc::peer_lost));
  EXPECT_EQ(r->error_message(), "barrier b: rank 2 is lost");
  // With no lost or failed participant, the one that left is named.
  request(4, barrier(2, "b", 10000, {0, 3}));
  EXPECT_EQ(reply_to(4, 2)->error_message(), "barrier b: rank 0 is left");
}

}  // namespace
