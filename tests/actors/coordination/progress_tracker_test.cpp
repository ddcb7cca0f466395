#include "actors/coordination/progress_tracker.hpp"

#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

namespace lifeboat {
namespace {

constexpr int64_t hang_timeout_ms = 1000;
constexpr int64_t step_ms = 20;

// Every rank heartbeats once per step, at step * step_ms, up to `last`
// (exclusive), except that `stuck` completes no step after `stuck_at`: its
// heartbeats say how long ago that step was completed.
void train(progress_tracker& t, int ranks, int64_t last, int stuck = -1, int64_t stuck_at = 0) {
  for (int64_t step = 0; step < last; ++step)
    for (int r = 0; r < ranks; ++r) {
      bool behind = r == stuck && step > stuck_at;
      t.on_heartbeat(r, behind ? stuck_at : step, 0, false, step * step_ms,
                     behind ? (step - stuck_at) * step_ms : 0);
    }
}

TEST(progress_tracker, a_rank_whose_heartbeat_says_it_is_stuck_behind_its_peers_is_hung) {
  progress_tracker t{4, hang_timeout_ms};
  // Rank 2 completed step 40; its heartbeat at step 89 said 980 ms ago.
  train(t, 4, 90, 2, 40);
  EXPECT_FALSE(t.find_hang(2));
  // The next says 1000 ms: the timeout.
  t.on_heartbeat(2, 40, 0, false, 90 * step_ms, hang_timeout_ms);
  auto hang = t.find_hang(2);
  ASSERT_TRUE(hang);
  EXPECT_EQ(hang->rank, 2);
  EXPECT_EQ(hang->step, 40);
  EXPECT_EQ(hang->stuck_ms, hang_timeout_ms);
  EXPECT_EQ(hang->peers_step, 89);
  for (int r : {0, 1, 3}) EXPECT_FALSE(t.find_hang(r)) << r;
}

TEST(progress_tracker, a_rank_level_with_its_peers_or_not_heard_from_is_not_hung) {
  progress_tracker t{3, hang_timeout_ms};
  train(t, 3, 10);
  // Everybody stopped at step 9 (a long step, or a checkpoint every rank takes).
  for (int r = 0; r < 3; ++r) t.on_heartbeat(r, 9, 0, false, 100 * step_ms, 100 * hang_timeout_ms);
  for (int r = 0; r < 3; ++r) EXPECT_FALSE(t.find_hang(r)) << r;
  // Rank 0 goes on; rank 1's last heartbeat, however long ago, said its step was fresh.
  progress_tracker u{2, hang_timeout_ms};
  u.on_heartbeat(0, 5, 0, false, 0);
  u.on_heartbeat(1, 5, 0, false, 0, 10);
  u.on_heartbeat(0, 60, 0, false, 10 * hang_timeout_ms);
  EXPECT_FALSE(u.find_hang(1));
}

TEST(progress_tracker, time_in_a_save_is_no_hang) {
  progress_tracker t{2, hang_timeout_ms};
  train(t, 2, 10);
  // Rank 1 saves at step 9 for long, while rank 0 finished its save and went on.
  t.on_heartbeat(1, 9, 0, true, 200, 20);
  t.on_heartbeat(0, 12, 0, false, 300);
  t.on_heartbeat(1, 9, 0, true, 200 + 10 * hang_timeout_ms, 10 * hang_timeout_ms);
  EXPECT_FALSE(t.find_hang(1));
  // Its save over, the step's age counts from the save's end.
  t.on_heartbeat(1, 9, 0, false, 300 + 10 * hang_timeout_ms, 10 * hang_timeout_ms + 100);
  t.on_heartbeat(1, 9, 0, false, 300 + 11 * hang_timeout_ms, 11 * hang_timeout_ms + 99);
  EXPECT_FALSE(t.find_hang(1));
  t.on_heartbeat(1, 9, 0, false, 300 + 11 * hang_timeout_ms, 11 * hang_timeout_ms + 100);
  EXPECT_TRUE(t.find_hang(1));
}

// After train(t, ranks, 10): every rank's heartbeat says it completed step 9
// `age_ms` ago; the ranks in `inside` are in step 10 (in a collective).
void stall(progress_tracker& t, int ranks, const std::vector<int>& inside, int64_t age_ms,
           int64_t step = 9) {
  for (int r = 0; r < ranks; ++r) {
    bool in_step = std::find(inside.begin(), inside.end(), r) != inside.end();
    t.on_heartbeat(r, step, 0, false, 9 * step_ms + age_ms, age_ms, in_step);
  }
}

TEST(progress_tracker, ranks_between_steps_while_the_others_wait_in_theirs_are_hung_together) {
  progress_tracker t{3, hang_timeout_ms};
  train(t, 3, 10);
  // Ranks 0 and 2 wait in step 10's all-reduce for rank 1, stuck before its step.
  stall(t, 3, {0, 2}, hang_timeout_ms - 1);
  for (int r = 0; r < 3; ++r) EXPECT_FALSE(t.find_job_hang(r)) << r;
  stall(t, 3, {0, 2}, hang_timeout_ms);
  for (int r = 0; r < 3; ++r) {
    auto hang = t.find_job_hang(r);
    ASSERT_TRUE(hang) << r;
    EXPECT_EQ(hang->step, 9);
    EXPECT_EQ(hang->stuck_ms, hang_timeout_ms);
    EXPECT_EQ(hang->outside, std::vector<int32_t>{1});
    // No peer is past any rank: the rule for one rank sees nothing.
    EXPECT_FALSE(t.find_hang(r)) << r;
  }
}

TEST(progress_tracker, ranks_whose_loop_ended_are_among_those_between_steps) {
  progress_tracker t{3, hang_timeout_ms};
  train(t, 3, 10);
  // Rank 0's loop ended at step 9, rank 1 is between steps, rank 2 in step 10.
  for (int r = 0; r < 3; ++r)
    t.on_heartbeat(r, 9, 0, false, 9 * step_ms + hang_timeout_ms, hang_timeout_ms, r == 2, r == 0);
  auto hang = t.find_job_hang(2);
  ASSERT_TRUE(hang);
  EXPECT_EQ(hang->outside, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(hang->finished, std::vector<int32_t>{0});
}

TEST(progress_tracker, every_rank_in_its_step_is_hung_together_with_none_named) {
  progress_tracker t{4, hang_timeout_ms};
  train(t, 4, 10);
  stall(t, 4, {0, 1, 2, 3}, hang_timeout_ms);
  auto hang = t.find_job_hang(3);
  ASSERT_TRUE(hang);
  EXPECT_TRUE(hang->outside.empty());
}

TEST(progress_tracker, ranks_between_steps_saving_or_in_their_first_step_are_not_hung_together) {
  // All between steps: the user's own pause (an evaluation outside run).
  progress_tracker paused{2, hang_timeout_ms};
  train(paused, 2, 10);
  stall(paused, 2, {}, 100 * hang_timeout_ms);
  EXPECT_FALSE(paused.find_job_hang(0));
  // Two ranks stalled in step 10 for long, then one saving.
  auto stalled_pair = [] {
    progress_tracker t{2, hang_timeout_ms};
    train(t, 2, 10);
    stall(t, 2, {0, 1}, 100 * hang_timeout_ms);
    return t;
  };
  auto saving = stalled_pair();
  saving.on_heartbeat(1, 9, 0, true, 200 * hang_timeout_ms, 200 * hang_timeout_ms, true);
  EXPECT_FALSE(saving.find_job_hang(0));
  // Every rank still in its first step since it started (a compilation).
  progress_tracker first{2, hang_timeout_ms};
  stall(first, 2, {0, 1}, 0, 4);
  stall(first, 2, {0, 1}, 100 * hang_timeout_ms, 4);
  EXPECT_FALSE(first.find_job_hang(0));
  // Ranks at different steps: the one behind is find_hang's.
  auto apart = stalled_pair();
  apart.on_heartbeat(1, 10, 0, false, 200 * hang_timeout_ms, 100 * hang_timeout_ms, true);
  EXPECT_FALSE(apart.find_job_hang(0));
  EXPECT_TRUE(apart.find_hang(0));
}

// Without a configured timeout, a long step of every rank (a recompilation)
// is no hang; a rank whose loop ended while the others wait in their next
// step (ranks that run uneven numbers of steps) is, after the adaptive one.
TEST(progress_tracker, the_adaptive_timeout_hangs_the_ranks_together_only_where_a_loop_ended) {
  for (auto timeout : {int64_t{0}, progress_tracker::adaptive_hang_timeout}) {
    progress_tracker t{2, timeout};
    train(t, 2, 10);
    stall(t, 2, {0}, 1'000'000);
    EXPECT_FALSE(t.find_job_hang(0)) << timeout;
  }
  auto ended_at = [](progress_tracker& t, int64_t age_ms) {
    t.on_heartbeat(0, 9, 0, false, 9 * step_ms + age_ms, age_ms, false, true);
    t.on_heartbeat(1, 9, 0, false, 9 * step_ms + age_ms, age_ms, true, false);
  };
  progress_tracker off{2, 0};
  train(off, 2, 10);
  ended_at(off, 1'000'000);
  EXPECT_FALSE(off.find_job_hang(1));
  progress_tracker adaptive{2, progress_tracker::adaptive_hang_timeout};
  train(adaptive, 2, 10);
  ended_at(adaptive, progress_tracker::adaptive_hang_floor_ms - 1);
  EXPECT_FALSE(adaptive.find_job_hang(1));
  ended_at(adaptive, progress_tracker::adaptive_hang_floor_ms);
  auto hang = adaptive.find_job_hang(1);
  ASSERT_TRUE(hang);
  EXPECT_EQ(hang->finished, std::vector<int32_t>{0});
  // Steps of 10 s: the adaptive timeout is ten of them, past the floor.
  progress_tracker slow{2, progress_tracker::adaptive_hang_timeout};
  for (int64_t step = 0; step < 10; ++step)
    for (int r = 0; r < 2; ++r) slow.on_heartbeat(r, step, 0, false, step * 10'000);
  auto long_ago = [&](int64_t age_ms) {
    slow.on_heartbeat(0, 9, 0, false, 90'000 + age_ms, age_ms, false, true);
    slow.on_heartbeat(1, 9, 0, false, 90'000 + age_ms, age_ms, true, false);
  };
  long_ago(progress_tracker::adaptive_hang_factor * 10'000 - 1);
  EXPECT_FALSE(slow.find_job_hang(1));
  long_ago(progress_tracker::adaptive_hang_factor * 10'000);
  EXPECT_TRUE(slow.find_job_hang(1));
}

TEST(progress_tracker, zero_turns_detection_off_and_unset_adapts_with_a_floor) {
  progress_tracker off{2, 0};
  train(off, 2, 50, 1, 5);
  off.on_heartbeat(1, 5, 0, false, 50 * step_ms, 1'000'000);
  EXPECT_FALSE(off.find_hang(1));

  progress_tracker adaptive{2, progress_tracker::adaptive_hang_timeout};
  EXPECT_EQ(adaptive.hang_timeout_ms(), progress_tracker::adaptive_hang_floor_ms);
  // Steps of 10 s: ten of them is past the floor.
  for (int64_t step = 0; step < 20; ++step)
    for (int r = 0; r < 2; ++r) adaptive.on_heartbeat(r, step, 0, false, step * 10'000);
  EXPECT_EQ(adaptive.hang_timeout_ms(), progress_tracker::adaptive_hang_factor * 10'000);
}

TEST(progress_tracker, step_time_leaves_out_warmup_and_time_blocked_in_barriers) {
  progress_tracker t{1, 0};
  // A first step 10x longer than the others, during the warm-up.
  t.on_heartbeat(0, 0, 0, false, 0);
  t.on_heartbeat(0, 1, 0, false, 10 * step_ms);
  for (int64_t step = 2; step < 40; ++step)
    t.on_heartbeat(0, step, (step - 1) * 5, false, 10 * step_ms + (step - 1) * step_ms);
  auto stats = t.stats(0, t.cluster_median_ms());
  // 20 ms a step, of which 5 ms at a barrier.
  EXPECT_DOUBLE_EQ(stats.median_seconds, 0.015);
  EXPECT_DOUBLE_EQ(stats.p99_seconds, 0.015);
  EXPECT_FALSE(stats.straggler);
}

TEST(progress_tracker, a_slow_rank_is_a_straggler_reported_once_per_episode) {
  progress_tracker t{4, 0};
  // Rank 3 computes 40 ms a step; the others 20 ms and wait 20 ms at the barrier.
  for (int64_t step = 0; step < 20; ++step)
    for (int r = 0; r < 4; ++r) t.on_heartbeat(r, step, r == 3 ? 0 : step * 20, false, step * 40);
  auto reference = t.cluster_median_ms();
  EXPECT_TRUE(t.stats(3, reference).straggler);
  for (int r = 0; r < 3; ++r) EXPECT_FALSE(t.stats(r, reference).straggler) << r;
  EXPECT_EQ(t.take_new_stragglers(), std::vector<int32_t>{3});
  EXPECT_TRUE(t.take_new_stragglers().empty());
}

}  // namespace
}  // namespace lifeboat
