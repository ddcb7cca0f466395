#include "actors/preemption/step_resolver_state.hpp"

#include <gtest/gtest.h>

#include "tests/actors/preemption/resolver_cluster.hpp"

namespace lifeboat {
namespace {

using test::cluster;
using test::t0;

TEST(step_resolver_state, without_grace_every_worker_commits_max_plus_one_as_final) {
  cluster c{4, 0};
  for (int r = 0; r < 4; ++r) c.workers[r]->completed = 10 + r;  // several steps apart
  c.post(2, c.at(2).on_local_notice(c.notice(0), c.now));
  c.run();
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(c.at(r).agreed_step(), 14) << "rank " << r;
    EXPECT_EQ(c.workers[r]->action.load(), 14);
    EXPECT_EQ(c.at(r).phase(), phase::checkpoint_scheduled);
  }
  EXPECT_FALSE(c.at(0).final_save_due_ms()) << "no grace period: the first save is final";
}

TEST(step_resolver_state, every_trainer_waits_at_its_next_step_until_the_commit_moves_it) {
  cluster c{2, 0};
  c.workers[0]->completed = 5;
  c.workers[1]->completed = 5;
  c.post(1, c.at(1).on_local_notice(c.notice(0), c.now));
  bool checked = false;
  c.run([&](const outgoing& m) {
    // Rank 1's trainer completes two more steps before the query reaches it.
    if (m.message.has_query()) {
      EXPECT_EQ(c.workers[0]->action.load(), 6) << "the leader holds at the step it is in";
      c.workers[1]->completed = 7;
    }
    if (m.message.has_commit()) {
      EXPECT_EQ(c.workers[1]->action.load(), 8) << "held at the step it is in";
      EXPECT_EQ(c.workers[0]->action.load(), 8) << "the leader took its commit as it sent it";
      checked = true;
    }
  });
  EXPECT_TRUE(checked);
  EXPECT_EQ(c.at(0).rounds(), 1u);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(c.at(r).agreed_step(), 8);
    EXPECT_EQ(c.workers[r]->action.load(), 8);
  }
}

TEST(step_resolver_state, in_a_world_of_one_the_notice_itself_commits) {
  cluster c{1, 0};
  c.workers[0]->completed = 4;
  auto out = c.at(0).on_local_notice(c.notice(0), c.now);
  EXPECT_EQ(c.at(0).agreed_step(), 5);
  EXPECT_TRUE(c.at(0).agreed_final());
  EXPECT_EQ(c.at(0).agreements(), 1u);
  EXPECT_EQ(c.workers[0]->action.load(), 5);
  ASSERT_EQ(out.size(), 2u) << "the query and the commit";
  for (auto& m : out) {
    EXPECT_EQ(m.to, every_other_rank) << "the leader takes its own query and commit";
    c.post(0, c.at(0).on_message(m.message, c.now));  // a copy that came back anyway
  }
  c.run();
  EXPECT_EQ(c.at(0).agreements(), 1u) << "a copy of its own query or commit changes nothing";
}

// A failed worker must never save (the exit controller fails its gate on
// another thread, so the resolver cannot rely on that having happened).
TEST(step_resolver_state, after_a_failure_no_round_is_answered_or_committed) {
  cluster c{3, 0};
  c.at(1).on_failure();
  c.post(2, c.at(2).on_local_notice(c.notice(0), c.now));
  c.run();
  EXPECT_EQ(c.at(0).rounds(), 1u) << "the leader had not heard of the failure";
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(c.at(r).agreements(), 0u) << "rank " << r;
    EXPECT_EQ(c.at(r).agreed_step(), -1) << "rank " << r;
  }
}

TEST(step_resolver_state, a_failed_leader_starts_no_round) {
  cluster c{2, 0, 2.0, 1000};
  c.at(0).on_failure();
  c.post(1, c.at(1).on_local_notice(c.notice(0), c.now));
  c.run();
  EXPECT_TRUE(c.at(0).on_backup_check(c.now + 5000).empty());
  EXPECT_EQ(c.at(0).rounds(), 0u);
  EXPECT_EQ(c.at(1).agreements(), 0u);
}

TEST(step_resolver_state, a_failed_worker_sends_no_notice) {
  cluster c{2, 0};
  c.at(1).on_failure();
  EXPECT_TRUE(c.at(1).on_local_notice(c.notice(0), c.now).empty());
}

TEST(step_resolver_state, with_grace_the_first_save_is_not_final_and_the_final_one_is_scheduled) {
  const int64_t grace = 60'000;
  cluster c{2, grace};
  c.at(0).record_step_seconds(0.5);
  c.at(0).record_checkpoint_seconds(1.5);
  c.post(1, c.at(1).on_local_notice(c.notice(0), c.now));
  c.run();
  EXPECT_EQ(c.at(0).agreed_step(), 1);
  ASSERT_TRUE(c.at(0).final_save_due_ms());
  // deadline - margin (5% of 60 s) - safety * (step + checkpoint + exit); the
  // round took no time here.
  EXPECT_EQ(*c.at(0).final_save_due_ms(), t0 + grace - 3000 - 2 * (500 + 1500 + exit_allowance_ms));

  EXPECT_TRUE(c.at(0).on_final_save_due(c.now).empty()) << "the first save is still being written";
  for (int r = 0; r < 2; ++r) c.at(r).on_save_committed(false);
  for (int r = 0; r < 2; ++r) c.workers[r]->completed = 20;
  c.post(0, c.at(0).on_final_save_due(c.now));
  c.run();
  EXPECT_EQ(c.at(1).agreed_step(), 21);
  EXPECT_EQ(c.workers[1]->action.load(), 21);
}

TEST(step_resolver_state, times_measured_during_the_countdown_move_the_final_save_earlier) {
  const int64_t grace = 60'000;
  const int64_t margin = 3000;
  cluster c{2, grace};
  c.post(1, c.at(1).on_local_notice(c.notice(0), c.now));
  c.run();
  // Nothing measured yet: the margin and the exit allowance are kept.
  ASSERT_TRUE(c.at(0).final_save_due_ms());
  EXPECT_EQ(*c.at(0).final_save_due_ms(), t0 + grace - margin - 2 * exit_allowance_ms);
  // The first save took 1.5 s, a step 0.5 s: safety 2 * (0.5 + 1.5 + exit) s before it.
  c.at(0).record_checkpoint_seconds(1.5);
  EXPECT_EQ(*c.at(0).final_save_due_ms(), t0 + grace - margin - 2 * (1500 + exit_allowance_ms));
  c.at(0).record_step_seconds(0.6);  // the span of the round: dropped
  c.at(0).record_step_seconds(0.5);
  EXPECT_EQ(*c.at(0).final_save_due_ms(),
            t0 + grace - margin - 2 * (500 + 1500 + exit_allowance_ms));
}

TEST(step_resolver_state, without_a_countdown_a_measurement_schedules_nothing) {
  cluster c{2, 60'000};
  c.at(0).record_checkpoint_seconds(1.5);
  c.at(0).record_step_seconds(0.5);
  EXPECT_FALSE(c.at(0).final_save_due_ms());
}

TEST(step_resolver_state, an_earlier_deadline_during_the_countdown_moves_the_final_save) {
  cluster c{2, 60'000};
  c.post(0, c.at(0).on_local_notice(c.notice(0), c.now));
  c.run();
  auto first_due = *c.at(0).final_save_due_ms();
  c.post(1, c.at(1).on_local_notice(c.notice(t0 + 10'000), c.now));
  c.run();
  ASSERT_TRUE(c.at(0).final_save_due_ms());
  EXPECT_LT(*c.at(0).final_save_due_ms(), first_due);
  EXPECT_EQ(c.at(0).deadline_ms(), t0 + 10'000);
  EXPECT_EQ(c.at(1).deadline_ms(), t0 + 10'000);
}

// Only the leader acts on a notice: the notice goes to it alone, and the
// other workers learn the deadline from its query.
TEST(step_resolver_state, a_notice_goes_to_the_leader_and_its_query_carries_the_deadline) {
  cluster c{3, 60'000};
  auto out = c.at(2).on_local_notice(c.notice(t0 + 30'000), c.now);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to, leader_rank);
  EXPECT_TRUE(out[0].message.has_notice());
  c.post(2, out);
  bool queried = false;
  c.run([&](const outgoing& m) {
    if (!m.message.has_query()) return;
    EXPECT_EQ(m.message.query().deadline_unix_ms(), t0 + 30'000);
    queried = true;
  });
  EXPECT_TRUE(queried);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(c.at(r).deadline_ms(), t0 + 30'000) << "rank " << r;
}

// A notice that starts no round (here: during the countdown) is relayed by
// the leader, so every worker still knows the earliest deadline.
TEST(step_resolver_state, a_notice_that_starts_no_round_is_relayed_to_every_worker) {
  cluster c{3, 60'000};
  c.post(0, c.at(0).on_local_notice(c.notice(0), c.now));
  c.run();
  auto rounds = c.at(0).rounds();
  c.post(2, c.at(2).on_local_notice(c.notice(t0 + 10'000), c.now));
  c.run();
  EXPECT_EQ(c.at(0).rounds(), rounds);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(c.at(r).deadline_ms(), t0 + 10'000) << "rank " << r;
}

// The process hosting the service (a coordinator given a SIGTERM) raises a
// notice without a deadline for every worker: each takes it with its own
// grace period, and the leader starts the round as for a notice of its own.
// A notice the process hosting the service raised for every worker, due at
// `deadline_ms` (0: none).
outgoing raised_notice(int64_t deadline_ms) {
  outgoing raised;
  raised.to = every_rank;
  raised.message.mutable_notice()->set_rank(service_sender);
  raised.message.mutable_notice()->set_source("signal:SIGTERM");
  raised.message.mutable_notice()->set_deadline_unix_ms(deadline_ms);
  return raised;
}

TEST(step_resolver_state, a_notice_from_the_services_host_takes_the_workers_grace_period) {
  const int64_t grace = 60'000;
  cluster c{3, grace};
  for (int r = 0; r < 3; ++r) c.workers[r]->completed = 7;
  c.post(service_sender, {raised_notice(0)});
  c.run();
  EXPECT_EQ(c.at(0).rounds(), 1u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(c.at(r).deadline_ms(), t0 + grace) << "rank " << r;
    EXPECT_EQ(c.at(r).agreed_step(), 8) << "rank " << r;
    EXPECT_FALSE(c.at(r).agreed_final()) << "rank " << r << ": the grace period leaves room";
  }
}

// The deadline of a notice the service's host raised is when it stops
// serving: a worker saves by then, or by its own grace period where that
// ends first (as for a notice of its own).
TEST(step_resolver_state, a_notice_from_the_services_host_is_due_at_its_deadline_or_the_grace) {
  const int64_t grace = 60'000;
  for (int64_t due : {int64_t{30'000}, int64_t{120'000}}) {
    cluster c{3, grace};
    for (int r = 0; r < 3; ++r) c.workers[r]->completed = 7;
    c.post(service_sender, {raised_notice(t0 + due)});
    c.run();
    for (int r = 0; r < 3; ++r)
      EXPECT_EQ(c.at(r).deadline_ms(), t0 + std::min(due, grace))
          << "rank " << r << ", due " << due;
  }
}

TEST(step_resolver_state, a_later_deadline_changes_nothing) {
  cluster c{2, 60'000};
  c.post(0, c.at(0).on_local_notice(c.notice(t0 + 30'000), c.now));
  c.run();
  auto rounds = c.at(0).rounds();
  auto due = c.at(0).final_save_due_ms();
  c.post(1, c.at(1).on_local_notice(c.notice(t0 + 50'000), c.now));
  c.run();
  EXPECT_EQ(c.at(0).rounds(), rounds);
  EXPECT_EQ(c.at(0).final_save_due_ms(), due);
  EXPECT_EQ(c.at(1).deadline_ms(), t0 + 30'000);
}

TEST(step_resolver_state, a_deadline_too_close_for_another_round_makes_the_first_save_final) {
  cluster c{2, 60'000};
  c.at(0).record_checkpoint_seconds(10);
  c.post(0, c.at(0).on_local_notice(c.notice(t0 + 5'000), c.now));
  c.run();
  EXPECT_EQ(c.at(0).agreed_step(), 1);
  EXPECT_FALSE(c.at(0).final_save_due_ms());
}

TEST(step_resolver_state, repeated_notices_make_exactly_one_decision) {
  cluster c{3, 0};
  for (int i = 0; i < 5; ++i)
    for (int r = 0; r < 3; ++r) c.post(r, c.at(r).on_local_notice(c.notice(t0 + 1000), c.now));
  c.run();
  EXPECT_EQ(c.at(0).rounds(), 1u);
  EXPECT_EQ(c.at(2).agreed_step(), 1);
}

// Every phase is published as well, for the heartbeats.
TEST(step_resolver_state, phases_follow_the_save_and_are_published) {
  cluster c{1, 60'000};
  auto in = [&](phase expected) {
    EXPECT_EQ(c.at(0).phase(), expected);
    EXPECT_EQ(c.workers[0]->board.get(), expected);
  };
  in(phase::training);
  c.post(0, c.at(0).on_local_notice(c.notice(0), c.now));
  c.run();
  in(phase::checkpoint_scheduled);
  c.at(0).on_save_started();
  in(phase::saving);
  c.at(0).on_save_committed(false);
  in(phase::grace_countdown);
  c.at(0).on_save_committed(true);
  in(phase::exiting);
}

// A follower learns of the notice from the query, before any commit.
TEST(step_resolver_state, a_follower_publishes_the_notice_it_learns_from_the_query) {
  cluster c{2, 60'000};
  c.post(0, c.at(0).on_local_notice(c.notice(t0 + 60'000), c.now));
  ASSERT_FALSE(c.in_flight.empty());
  auto query = std::move(c.in_flight.front());
  c.in_flight.pop_front();
  c.post(1, c.at(1).on_message(query.out.message, c.now));
  EXPECT_EQ(c.workers[1]->board.get(), phase::notice_received);
  c.run();
  EXPECT_EQ(c.workers[1]->board.get(), phase::checkpoint_scheduled);
}

TEST(step_resolver_state, backup_saves_come_from_the_leader_at_its_interval_and_training_goes_on) {
  const int64_t every = 5'000;
  cluster c{3, 60'000, 2.0, every};
  for (int r = 0; r < 3; ++r) c.workers[r]->completed = 10 + r;
  EXPECT_TRUE(c.at(0).on_backup_check(t0).empty()) << "the first check starts the clock";
  EXPECT_TRUE(c.at(0).on_backup_check(t0 + every - 1).empty());
  EXPECT_TRUE(c.at(1).on_backup_check(t0 + 10 * every).empty()) << "only the leader decides";
  c.post(0, c.at(0).on_backup_check(t0 + every));
  c.run();
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(c.at(r).agreed_step(), 13) << "rank " << r;
    EXPECT_EQ(c.workers[r]->action.load(), 13);
    EXPECT_EQ(c.at(r).deadline_ms(), 0) << "a backup is no notice";
    c.at(r).on_save_committed(false);
    EXPECT_EQ(c.at(r).phase(), phase::training);
  }
  EXPECT_FALSE(c.at(0).final_save_due_ms());
  EXPECT_TRUE(c.at(0).on_backup_check(t0 + 2 * every - 1).empty());

  // A notice afterwards gets a round of its own, with a final save scheduled.
  for (int r = 0; r < 3; ++r) c.workers[r]->completed = 20;
  auto rounds = c.at(0).rounds();
  c.post(1, c.at(1).on_local_notice(c.notice(0), c.now));
  c.run();
  EXPECT_GT(c.at(0).rounds(), rounds);
  EXPECT_EQ(c.at(2).agreed_step(), 21);
  EXPECT_TRUE(c.at(0).final_save_due_ms());
  EXPECT_TRUE(c.at(0).on_backup_check(t0 + 100 * every).empty()) << "no backups after a notice";
}

TEST(step_resolver_state, a_notice_during_a_backup_round_makes_it_the_notices_first_save) {
  const int64_t every = 5'000;
  cluster c{3, 60'000, 2.0, every};
  c.at(0).on_backup_check(t0);
  c.post(0, c.at(0).on_backup_check(t0 + every));
  c.post(2, c.at(2).on_local_notice(c.notice(t0 + 60'000), c.now));
  c.run();
  EXPECT_EQ(c.at(0).rounds(), 1u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(c.at(r).agreed_step(), 1) << "rank " << r;
    EXPECT_EQ(c.at(r).deadline_ms(), t0 + 60'000) << "rank " << r;
  }
  ASSERT_TRUE(c.at(0).final_save_due_ms()) << "the final save of the grace period follows";
}

// A notice while a backup is being written: no round may start before the
// backup is committed (its query would move the stop step before the
// backup's); the backup is the notice's first save and the final one follows.
TEST(step_resolver_state, a_notice_while_a_backup_is_written_waits_for_it_and_then_saves_final) {
  const int64_t every = 5'000;
  cluster c{3, 0, 2.0, every};
  c.at(0).on_backup_check(t0);
  c.post(0, c.at(0).on_backup_check(t0 + every));
  c.run();
  ASSERT_EQ(c.at(0).agreed_step(), 1);
  auto rounds = c.at(0).rounds();
  c.post(1, c.at(1).on_local_notice(c.notice(0), c.now));
  c.run();
  EXPECT_EQ(c.at(0).rounds(), rounds) << "no round while the backup is written";
  ASSERT_TRUE(c.at(0).final_save_due_ms());
  EXPECT_TRUE(c.at(0).on_final_save_due(c.now).empty());
  EXPECT_TRUE(c.at(0).on_backup_check(t0 + 10 * every).empty());

  for (int r = 0; r < 3; ++r) {
    c.at(r).on_save_committed(false);
    c.workers[r]->completed = 4;
  }
  c.post(0, c.at(0).on_final_save_due(c.now));
  c.run();
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(c.at(r).agreed_step(), 5) << "rank " << r;
    EXPECT_EQ(c.workers[r]->action.load(), 5);
  }
  EXPECT_FALSE(c.at(0).final_save_due_ms());
}

}  // namespace
}  // namespace lifeboat
