// coordination_state's membership: joins and refusals, heartbeats and their
// timeout, leaves, the ranks present.
#include "actors/coordination/coordination_state.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/actors/coordination/state_fixture.hpp"

using namespace lifeboat;
using namespace lifeboat::test;

namespace {

TEST_F(state_test, join_is_acknowledged_and_reported) {
  auto reply = join(1, 2);
  EXPECT_TRUE(reply.ok());
  // A quarter of the service's heartbeat timeout (2 s): how often it needs
  // the worker's heartbeats.
  EXPECT_EQ(reply.heartbeat_interval_ms(), 500);
  ASSERT_EQ(out.events.size(), 1u);
  EXPECT_EQ(out.events[0].rank, 2);
  EXPECT_EQ(out.events[0].kind, membership_event::joined);
  EXPECT_EQ(state_of(2), "alive");
  EXPECT_EQ(state_of(0), "joining");
}

TEST_F(state_test, wrong_token_is_refused_and_closed) {
  auto reply = join(1, 0, 0, "wrong");
  EXPECT_FALSE(reply.ok());
  EXPECT_NE(reply.message().find("token"), std::string::npos);
  EXPECT_EQ(out.closes, std::vector<conn_id>{1});
  EXPECT_EQ(state_of(0), "joining");
  EXPECT_EQ(st.connections(), 0u);
}

TEST_F(state_test, wrong_world_size_duplicate_rank_and_bad_version_are_refused) {
  EXPECT_FALSE(join(1, 0, 0, token, 5).ok());
  ASSERT_TRUE(join(2, 0).ok());
  auto dup = join(3, 0);
  EXPECT_FALSE(dup.ok());
  EXPECT_NE(dup.message().find("already joined"), std::string::npos);
  auto version = join(4, 1, 0, token, 4, coordination_protocol_version + 1);
  EXPECT_FALSE(version.ok());
  EXPECT_NE(version.message().find(std::to_string(coordination_protocol_version + 1)),
            std::string::npos);
  EXPECT_NE(version.message().find(std::to_string(coordination_protocol_version)),
            std::string::npos);
  EXPECT_EQ(state_of(0), "alive");
}

// A heartbeat's status is the protocol's, not the service's: it is kept as
// sent, the last non-empty one per rank, and put in no row.
TEST_F(state_test, heartbeats_carry_an_opaque_status_kept_per_rank) {
  join_all();
  auto beat = [&](conn_id conn, const std::string& status) {
    wire::Envelope hb;
    hb.mutable_heartbeat()->set_step(5);
    hb.mutable_heartbeat()->set_status(status);
    request(conn, hb);
    // Each heartbeat is answered, so that a worker behind a partition
    // notices that this service fell silent.
    ASSERT_EQ(out.frames.size(), 1u);
    EXPECT_EQ(out.frames[0].first, conn);
    EXPECT_TRUE(out.frames[0].second.has_heartbeat());
  };
  EXPECT_EQ(st.reported_status(0), "");
  beat(1, "training");
  beat(2, std::string{"\0\xff bytes", 8});
  EXPECT_EQ(st.reported_status(0), "training");
  EXPECT_EQ(st.reported_status(1), std::string("\0\xff bytes", 8));
  EXPECT_EQ(st.reported_status(2), "");
  // An empty status reports nothing: the last one stands.
  beat(1, "");
  EXPECT_EQ(st.reported_status(0), "training");
  for (auto& row : st.workers(now)) EXPECT_EQ(row.phase(), "") << row.rank();
  EXPECT_EQ(st.reported_status(-1), "");
  EXPECT_EQ(st.reported_status(4), "");
  // A new generation starts afresh.
  ASSERT_TRUE(join(10, 0, 1).ok());
  EXPECT_EQ(st.reported_status(0), "");
}

// Heartbeat.paused (a worker in a save) keeps a step that does not move from
// being a hang; once the worker goes on unpaused, the step's age counts again.
TEST_F(state_test, a_paused_worker_is_not_hung_and_an_unpaused_one_is) {
  join_hang_timeout_ms = 1000;
  join_all();
  auto beat = [&](conn_id conn, int64_t step, int64_t age_ms, bool paused) {
    wire::Envelope hb;
    hb.mutable_heartbeat()->set_step(step);
    hb.mutable_heartbeat()->set_step_age_ms(age_ms);
    hb.mutable_heartbeat()->set_paused(paused);
    request(conn, hb);
  };
  auto failures = [&] {
    size_t n = 0;
    for (auto& [c, e] : out.frames) n += e.has_failure() ? 1 : 0;
    return n;
  };
  beat(1, 5, 0, false);
  beat(2, 5, 0, false);
  beat(1, 9, 0, false);
  beat(2, 5, 5000, true);
  EXPECT_EQ(failures(), 0u);
  EXPECT_EQ(state_of(1), "alive");
  beat(2, 5, 5000, false);
  EXPECT_EQ(state_of(1), "alive");
  beat(2, 5, 6000, false);
  EXPECT_GT(failures(), 0u);
  EXPECT_EQ(state_of(1), "error");
}

// Every rank's step stopped at once. The ranks between steps hold the ones
// in theirs (in a collective): they are the hung ones. With every rank in
// its step none can be named: the job fails as hung, as rank -1, once.
struct job_hang_test : state_test {
  bool rank_2_outside = false;
  bool rank_2_finished = false;
  std::vector<wire::PeerFailure> failures;

  void beat_all(int64_t step, int64_t age_ms) {
    for (conn_id c = 1; c <= 4; ++c) {
      wire::Envelope hb;
      hb.mutable_heartbeat()->set_step(step);
      hb.mutable_heartbeat()->set_step_age_ms(age_ms);
      hb.mutable_heartbeat()->set_in_step(!((rank_2_outside || rank_2_finished) && c == 3));
      hb.mutable_heartbeat()->set_finished(rank_2_finished && c == 3);
      request(c, hb);
      for (auto& [to, e] : out.frames)
        if (e.has_failure()) failures.push_back(e.failure());
    }
  }

  void stop_together(int32_t named, const std::string& why) {
    join_hang_timeout_ms = 1000;
    join_all();
    beat_all(5, 0);
    beat_all(6, 0);
    beat_all(6, 999);
    EXPECT_TRUE(failures.empty());
    beat_all(6, 1000);
    ASSERT_EQ(failures.size(), 4u);
    for (auto& f : failures) {
      EXPECT_EQ(f.code(), static_cast<int32_t>(errc::hung));
      EXPECT_NE(f.message().find("hang: no rank completed a step for 1.0 s"), std::string::npos)
          << f.message();
      EXPECT_NE(f.message().find(why), std::string::npos) << f.message();
      EXPECT_EQ(f.rank(), named);
    }
    // Told once: later heartbeats of the stuck ranks fail nothing more.
    beat_all(6, 5000);
    EXPECT_EQ(failures.size(), 4u);
  }
};

TEST_F(job_hang_test, a_rank_between_steps_while_the_others_wait_in_theirs_is_named_hung) {
  rank_2_outside = true;
  stop_together(2, "this rank was between steps while the others waited in theirs");
}

TEST_F(job_hang_test, a_rank_whose_loop_ended_while_the_others_wait_in_a_step_is_named) {
  rank_2_finished = true;
  stop_together(2, "this rank ended its training loop while the others waited in their next step");
}

TEST_F(job_hang_test, every_rank_in_its_step_fails_the_job_as_hung_with_none_named) {
  stop_together(-1, "while every rank was in its next step");
}

TEST_F(state_test, missing_heartbeats_mark_a_worker_lost) {
  join_all();
  now += heartbeat_timeout_ms - 1;
  wire::Envelope hb;
  for (conn_id c = 1; c <= 3; ++c) {
    hb.mutable_heartbeat()->set_step(17);
    request(c, hb);
  }
  now += 1;
  st.on_tick(now);
  out = st.take_output();
  EXPECT_EQ(state_of(3), "lost");
  EXPECT_EQ(state_of(0), "alive");
  EXPECT_EQ(st.workers(now)[0].step(), 17);
  EXPECT_EQ(out.closes, std::vector<conn_id>{4});
  // The silent rank itself is told why, before its connection closes: it
  // may run again (it was stopped) and must name itself, not the service.
  std::vector<std::string> told_rank_3;
  for (auto& [c, e] : out.frames)
    if (c == 4 && e.has_failure())
      told_rank_3.push_back(std::to_string(e.failure().rank()) + " " + e.failure().message());
  EXPECT_EQ(told_rank_3, std::vector<std::string>{"3 no heartbeat for " +
                                                  std::to_string(heartbeat_timeout_ms) + " ms"});
  pass_loss_window(heartbeat_timeout_ms / heartbeats_per_timeout);
  int lost = 0;
  for (auto& [c, e] : out.frames)
    if (e.has_failure() && e.failure().rank() == 3 && e.failure().lost()) ++lost;
  EXPECT_EQ(lost, 3);
}

// A stall of the service's own (the whole job stopped with Ctrl-Z, then
// continued) is not counted against the workers: after it they have a whole
// timeout to beat again, and one that stays silent is lost then.
TEST_F(state_test, a_stall_of_the_service_itself_is_not_the_workers_silence) {
  join_all();
  auto start = now;
  now = start + 15000;
  st.forgive_stall(15000 - 500, now);
  st.on_tick(now);
  out = st.take_output();
  for (int32_t rank = 0; rank < 4; ++rank) EXPECT_EQ(state_of(rank), "alive") << rank;
  EXPECT_TRUE(out.closes.empty());
  // Ranks 0..2 beat again after the stall, rank 3 does not.
  now += 100;
  wire::Envelope hb;
  hb.mutable_heartbeat()->set_step(3);
  for (conn_id c = 1; c <= 3; ++c) request(c, hb);
  now = start + 500 + heartbeat_timeout_ms + 14500;
  st.on_tick(now);
  out = st.take_output();
  EXPECT_EQ(state_of(0), "alive");
  EXPECT_EQ(state_of(3), "lost");
  EXPECT_EQ(out.closes, std::vector<conn_id>{4});
}

// A launcher kills the process of a rank lost for its silence (it may be
// stopped or frozen), not one whose connection closed (it is ending).
TEST_F(state_test, a_loss_says_whether_the_rank_fell_silent_or_closed_its_connection) {
  join_all();
  st.on_disconnect(4, now);  // rank 3
  auto closed = st.take_output();
  now += heartbeat_timeout_ms - 1;
  wire::Envelope hb;
  hb.mutable_heartbeat()->set_step(1);
  request(1, hb);
  request(2, hb);  // ranks 0 and 1 beat, rank 2 is silent
  now += 1;
  st.on_tick(now);
  auto silence = st.take_output();
  std::vector<std::pair<int32_t, bool>> lost;
  for (auto* o : {&closed, &silence})
    for (auto& e : o->events)
      if (e.kind == membership_event::lost) lost.emplace_back(e.rank, e.silent);
  EXPECT_EQ(lost, (std::vector<std::pair<int32_t, bool>>{{3, false}, {2, true}}));
}

// A host cut off: its ranks fall silent within one heartbeat interval of each
// other. Every survivor reports the first failure it hears, so each failure
// names every rank lost with it.
TEST_F(state_test, ranks_that_fall_silent_together_are_named_together) {
  join_all();
  auto interval = heartbeat_timeout_ms / heartbeats_per_timeout;
  auto beat_from = [&](std::vector<conn_id> conns) {
    wire::Envelope hb;
    hb.mutable_heartbeat()->set_step(3);
    for (auto c : conns) request(c, hb);
  };
  now += interval / 2;
  beat_from({1, 2, 4});  // rank 2 (connection 3) is silent from here
  now += interval / 2;
  beat_from({1, 2});  // and rank 3 (connection 4) from here
  now += heartbeat_timeout_ms - interval;
  beat_from({1, 2});
  // Rank 2 is overdue from now on, rank 3 half an interval later.
  now += interval / 4;
  st.on_tick(now);
  out = st.take_output();
  EXPECT_EQ(state_of(2), "lost");
  EXPECT_EQ(state_of(3), "alive");
  // The survivors hear nothing yet; only rank 2 (connection 3) is told.
  for (auto& [c, e] : out.frames) EXPECT_EQ(e.has_failure(), c == 3) << c;
  now += interval / 4;
  st.on_tick(now);
  out = st.take_output();
  EXPECT_EQ(state_of(3), "lost");
  pass_loss_window(interval);
  std::vector<std::string> told;
  for (auto& [c, e] : out.frames)
    if (c == 1 && e.has_failure())
      told.push_back("rank " + std::to_string(e.failure().rank()) + ": " + e.failure().message());
  ASSERT_EQ(told.size(), 2u);
  for (auto& t : told)
    EXPECT_NE(t.find(" ms (lost together: rank 2, rank 3)"), std::string::npos) << t;
}

// A loss still untold when a new generation starts belongs to the old one.
TEST_F(state_test, a_new_generation_hears_nothing_of_the_old_ones_losses) {
  join_all();
  st.on_disconnect(4, now);
  st.take_output();
  ASSERT_TRUE(join(10, 0, 1).ok());
  pass_loss_window();
  for (auto& [c, e] : out.frames) EXPECT_FALSE(e.has_failure());
}

TEST_F(state_test, clean_leave_is_not_a_loss) {
  join_all();
  wire::Envelope leave;
  leave.mutable_leave()->set_id(9);
  request(2, leave);
  EXPECT_EQ(reply_to(2, 9)->error_code(), 0u);
  st.on_disconnect(2, now);
  out = st.take_output();
  EXPECT_EQ(state_of(1), "left");
  for (auto& [c, e] : out.frames) EXPECT_FALSE(e.has_failure());
}

// A worker's heartbeat or error report sent before it saw its leave's reply
// is no stranger's request: the connection closes with the leave, and what
// comes after on it is not answered, not warned of and fails nothing.
TEST_F(state_test, a_leave_closes_its_connection_after_the_reply) {
  join_all();
  wire::Envelope leave;
  leave.mutable_leave()->set_id(9);
  request(2, leave);
  EXPECT_EQ(reply_to(2, 9)->error_code(), 0u);
  EXPECT_EQ(out.closes, std::vector<conn_id>{2});
  wire::Envelope report;
  report.mutable_error()->set_code(42);
  report.mutable_error()->set_message("the peers' failure, echoed");
  testing::internal::CaptureStderr();
  request(2, report);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_TRUE(out.frames.empty());
  EXPECT_TRUE(out.closes.empty());
  st.on_disconnect(2, now);
  pass_loss_window();
  for (auto& [c, e] : out.frames) EXPECT_FALSE(e.has_failure());
  EXPECT_EQ(state_of(1), "left");
}

// Every rank leaves, then one joins the same generation again (the job run
// again against a service that stayed up, without a new generation; or a
// second handler in a worker): a new session of the generation starts, with
// none of the last one's keys. Before, its first barrier failed naming the
// ranks that had left, and a save collided with the last session's key.
TEST_F(state_test, a_rank_that_left_joins_again_into_a_new_session_once_no_rank_is_joined) {
  join_all();
  request(1, insert(1, "lifeboat/tiers/written/3/0", "x"));
  ASSERT_EQ(reply_to(1, 1)->error_code(), 0u);
  for (conn_id conn = 1; conn <= 4; ++conn) leave(conn);
  ASSERT_TRUE(join(11, 0).ok());
  EXPECT_EQ(state_of(0), "alive");
  for (int32_t r = 1; r < 4; ++r) EXPECT_EQ(state_of(r), "joining") << r;
  request(11, insert(2, "lifeboat/tiers/written/3/0", "x"));
  EXPECT_EQ(reply_to(11, 2)->error_code(), 0u) << reply_to(11, 2)->error_message();
  for (int32_t r = 1; r < 4; ++r) ASSERT_TRUE(join(11 + r, r).ok()) << r;
}

// While a rank of the generation is still joined, a rank that left it and
// joins again waits for them to leave; when they do not, it is refused,
// named: its peers are in the last session.
TEST_F(state_test, a_rank_that_left_is_refused_while_others_stay_joined) {
  join_all();
  leave(1);
  ASSERT_FALSE(send_join(11, 0));
  // The others stay: their heartbeats come.
  now += rejoin_hold_ms / 2;
  for (conn_id conn = 2; conn <= 4; ++conn) {
    wire::Envelope beat;
    beat.mutable_heartbeat();
    request(conn, beat);
  }
  now += rejoin_hold_ms / 2 - 1;
  st.on_tick(now);
  out = st.take_output();
  ASSERT_FALSE(join_reply_to(11));
  EXPECT_EQ(st.next_deadline_ms(), now + 1);
  now += 1;
  st.on_tick(now);
  out = st.take_output();
  auto again = join_reply_to(11);
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->ok());
  EXPECT_NE(again->message().find("rank 0 took part in generation 0 (left now) and joins it again "
                                  "while rank 1, rank 2, rank 3 still take part"),
            std::string::npos)
      << again->message();
  EXPECT_EQ(state_of(1), "alive");
}

// A script's next handler: rank 0 closed its first and joins again before
// the others' leaves, sent after the same closing barrier, came. Its join
// waits and goes into the new session once they left. Before, it was refused.
TEST_F(state_test, a_rank_that_left_joins_the_new_session_once_the_others_left_meanwhile) {
  join_all();
  leave(1);
  ASSERT_FALSE(send_join(11, 0));
  leave(2);
  leave(3);
  EXPECT_FALSE(join_reply_to(11));
  leave(4);
  auto again = join_reply_to(11);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->ok()) << again->message();
  EXPECT_EQ(state_of(0), "alive");
  for (int32_t r = 1; r < 4; ++r) EXPECT_EQ(state_of(r), "joining") << r;
  for (int32_t r = 1; r < 4; ++r) ASSERT_TRUE(join(11 + r, r).ok()) << r;
  // Nothing held is left to settle: no second reply to the join.
  now += rejoin_hold_ms;
  st.on_tick(now);
  out = st.take_output();
  EXPECT_FALSE(join_reply_to(11));
}

TEST_F(state_test, present_workers_are_the_live_and_the_failed_ranks_still_here) {
  EXPECT_TRUE(st.present_workers().empty());
  join_all();
  wire::Envelope leave;
  leave.mutable_leave()->set_id(9);
  request(1, leave);         // rank 0 leaves
  st.on_disconnect(3, now);  // rank 2 is lost
  wire::Envelope report;
  report.mutable_error()->set_code(42);
  request(4, report);  // rank 3 failed
  auto present = st.present_workers();
  ASSERT_EQ(present.size(), 2u);
  EXPECT_EQ(present[0].rank, 1);
  EXPECT_EQ(present[0].kind, membership_event::joined);
  EXPECT_EQ(present[1].rank, 3);
  EXPECT_EQ(present[1].kind, membership_event::error);
}

}  // namespace
