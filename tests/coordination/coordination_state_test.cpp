#include "actors/coordination/coordination_state.hpp"

#include <gtest/gtest.h>

#include "actors/coordination/coordination_auth.hpp"
#include "tests/coordination/state_fixture.hpp"

using namespace lifeboat;
using namespace lifeboat::test;

namespace {

TEST(coordination_keys, normalisation_collapses_and_strips_slashes) {
  EXPECT_EQ(normalize_key("a//b///c/"), "a/b/c");
  EXPECT_EQ(normalize_key("/"), "/");
  EXPECT_EQ(normalize_prefix("a//b/"), "a/b/");
}

TEST_F(state_test, join_is_acknowledged_and_reported) {
  auto reply = join(1, 2);
  EXPECT_TRUE(reply.ok());
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

TEST_F(state_test, insert_if_absent_and_blocking_get) {
  join_all();
  request(2, get(5, "a//b/", 1000));
  EXPECT_FALSE(reply_to(2, 5));
  request(1, insert(1, "a/b", "x"));
  EXPECT_EQ(reply_to(1, 1)->error_code(), 0u);
  ASSERT_TRUE(reply_to(2, 5));
  EXPECT_EQ(reply_to(2, 5)->value(), "x");
  request(3, insert(2, "/a/b", "y"));
  request(3, insert(2, "a/b/", "y"));
  EXPECT_EQ(reply_to(3, 2)->error_code(), static_cast<uint32_t>(errc::already_exists));
}

TEST_F(state_test, get_times_out_at_its_deadline_and_can_be_cancelled) {
  join_all();
  request(1, get(1, "never", 200));
  request(1, get(2, "never", 10000));
  EXPECT_EQ(st.next_deadline_ms(), now + 200);
  st.on_tick(now + 199);
  out = st.take_output();
  EXPECT_FALSE(reply_to(1, 1));
  st.on_tick(now + 200);
  out = st.take_output();
  EXPECT_EQ(reply_to(1, 1)->error_code(), static_cast<uint32_t>(errc::timeout));
  wire::Envelope cancel;
  cancel.mutable_cancel()->set_id(2);
  request(1, cancel);
  EXPECT_EQ(reply_to(1, 2)->error_code(), static_cast<uint32_t>(errc::cancelled));
}

TEST_F(state_test, prefix_get_and_erase) {
  join_all();
  request(1, insert(1, "ckpt/1", "a"));
  request(1, insert(2, "ckpt/2", "b"));
  request(1, insert(3, "ckptx", "c"));
  EXPECT_EQ(st.snapshot("ckpt/").size(), 2u);
  wire::Envelope erase;
  erase.mutable_erase_prefix()->set_id(4);
  erase.mutable_erase_prefix()->set_prefix("ckpt//");
  request(1, erase);
  EXPECT_EQ(reply_to(1, 4)->error_code(), 0u);
  EXPECT_EQ(st.snapshot(""), (std::map<std::string, std::string>{{"ckptx", "c"}}));
}

TEST_F(state_test, barrier_releases_everyone_when_the_last_arrives) {
  join_all();
  for (int32_t r = 0; r < 3; ++r) {
    request(r + 1, barrier(1, "b", 1000));
    EXPECT_TRUE(out.frames.empty());
  }
  request(4, barrier(1, "b", 1000));
  for (conn_id c = 1; c <= 4; ++c) EXPECT_EQ(reply_to(c, 1)->error_code(), 0u);
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

TEST_F(state_test, barrier_fails_for_everyone_when_a_participant_is_lost) {
  join_all();
  request(1, barrier(1, "b", 10000));
  request(2, barrier(1, "b", 10000));
  st.on_disconnect(4, now);
  out = st.take_output();
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
  out = st.take_output();
  request(4, barrier(1, "b", 10000));
  auto r = reply_to(4, 1);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->error_code(), static_cast<uint32_t>(errc::peer_lost));
  EXPECT_EQ(r->error_message(), "barrier b: rank 2 is lost");
  // With no lost or failed participant, the one that left is named.
  request(4, barrier(2, "b", 10000, {0, 3}));
  EXPECT_EQ(reply_to(4, 2)->error_message(), "barrier b: rank 0 is left");
}

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

// A coordinator has no step resolver: its phase is what the service sees.
TEST_F(state_test, the_cluster_phase_follows_notices_and_departures) {
  EXPECT_EQ(st.cluster_phase(), phase::training);
  join_all();
  request(1, insert(1, "lifeboat/noticed", "not a notice key"));
  EXPECT_EQ(st.cluster_phase(), phase::training);
  request(2, insert(2, "lifeboat/notice/1", "notice"));
  EXPECT_EQ(st.cluster_phase(), phase::notice_received);
  wire::Envelope leave;
  leave.mutable_leave()->set_id(9);
  request(3, leave);
  EXPECT_EQ(st.cluster_phase(), phase::exiting);
  // A new generation starts afresh.
  ASSERT_TRUE(join(10, 0, 1).ok());
  EXPECT_EQ(st.cluster_phase(), phase::training);
  st.on_disconnect(10, now);
  EXPECT_EQ(st.cluster_phase(), phase::exiting);
}

// Heartbeats carry each worker's phase: the rows show it, and the cluster is
// as far as its furthest worker.
TEST_F(state_test, heartbeats_carry_each_workers_phase) {
  join_all();
  auto beat = [&](conn_id conn, const std::string& phase) {
    wire::Envelope hb;
    hb.mutable_heartbeat()->set_step(5);
    hb.mutable_heartbeat()->set_phase(phase);
    request(conn, hb);
    // Each heartbeat is answered, so that a worker behind a partition
    // notices that this service fell silent.
    ASSERT_EQ(out.frames.size(), 1u);
    EXPECT_EQ(out.frames[0].first, conn);
    EXPECT_TRUE(out.frames[0].second.has_heartbeat());
  };
  EXPECT_EQ(st.workers(now)[0].phase(), "");
  beat(1, "training");
  beat(2, "saving");
  EXPECT_EQ(st.workers(now)[0].phase(), "training");
  EXPECT_EQ(st.workers(now)[1].phase(), "saving");
  EXPECT_EQ(st.workers(now)[2].phase(), "");
  EXPECT_EQ(st.cluster_phase(), phase::saving);
  beat(3, "grace_countdown");
  EXPECT_EQ(st.cluster_phase(), phase::grace_countdown);
  // A phase this service does not know keeps the last one it did.
  beat(3, "hibernating");
  EXPECT_EQ(st.workers(now)[2].phase(), "grace_countdown");
  beat(2, "training");
  beat(3, "training");
  EXPECT_EQ(st.cluster_phase(), phase::training);
  // A recorded notice counts before any heartbeat says so.
  request(4, insert(1, "lifeboat/notice/3", "notice"));
  EXPECT_EQ(st.cluster_phase(), phase::notice_received);
  beat(4, "checkpoint_scheduled");
  EXPECT_EQ(st.cluster_phase(), phase::checkpoint_scheduled);
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
  int lost = 0;
  for (auto& [c, e] : out.frames)
    if (e.has_failure() && e.failure().rank() == 3 && e.failure().lost()) ++lost;
  EXPECT_EQ(lost, 3);
}

// A launcher reports a worker's process that ended before it joined: no
// connection of its would ever close, so without the report the peers would
// wait for it in their barriers until a timeout.
TEST_F(state_test, a_process_that_ended_before_it_joined_is_lost_at_once) {
  for (int32_t r = 0; r < 3; ++r) ASSERT_TRUE(join(r + 1, r).ok());
  request(1, barrier(5, "start", 60'000));
  EXPECT_FALSE(reply_to(1, 5));
  st.on_process_exit(3, 0, "(pid 42) exited with code 7");
  out = st.take_output();
  EXPECT_EQ(state_of(3), "lost");
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
  ASSERT_EQ(out.events.size(), 1u);
  EXPECT_EQ(out.events[0].kind, membership_event::lost);
  EXPECT_EQ(out.events[0].generation, 0u);
  // A barrier that starts later fails at once too.
  request(2, barrier(6, "restore", 60'000));
  ASSERT_TRUE(reply_to(2, 6));
  EXPECT_EQ(reply_to(2, 6)->error_code(), static_cast<uint32_t>(errc::peer_lost));
}

// A joined worker's end is its connection's to tell (a clean leave stays a
// leave), and a report from an older generation changes nothing.
TEST_F(state_test, a_process_exit_changes_only_a_rank_that_never_joined_in_its_generation) {
  ASSERT_TRUE(join(1, 0, 1).ok());
  st.on_process_exit(0, 1, "(pid 40) was killed by SIGTERM");
  st.on_process_exit(1, 0, "(pid 41) was killed by SIGTERM");
  out = st.take_output();
  EXPECT_EQ(state_of(0), "alive");
  EXPECT_EQ(state_of(1), "joining");
  EXPECT_TRUE(out.events.empty());
  EXPECT_TRUE(out.frames.empty());
  // One of a newer generation starts it, as its first join would.
  st.on_process_exit(1, 2, "(pid 51) exited with code 1");
  out = st.take_output();
  EXPECT_EQ(st.generation(), 2u);
  EXPECT_EQ(state_of(0), "joining");
  EXPECT_EQ(state_of(1), "lost");
  EXPECT_EQ(out.closes, std::vector<conn_id>{1});
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
