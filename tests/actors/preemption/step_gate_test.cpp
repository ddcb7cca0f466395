#include "actors/preemption/step_gate.hpp"

#include <gtest/gtest.h>

#include <future>

namespace lifeboat {
namespace {

using namespace std::chrono_literals;

// Bounds every wait on the trainer thread; a correct gate answers at once.
constexpr auto answer_bound = 5s;

struct gate_fixture : testing::Test {
  std::atomic<int64_t> completed{0};
  std::atomic<int64_t> action{step_gate::no_step};
  step_gate gate{completed, action};

  // Waits until the trainer thread blocks in the gate at `step`.
  bool trainer_waits_at(int64_t step) {
    auto until = std::chrono::steady_clock::now() + answer_bound;
    while (gate.waiting_at() != step)
      if (std::chrono::steady_clock::now() > until) return false;
    return true;
  }

  // Plays the trainer: completes `step` and, if it must stop, asks the gate.
  std::future<step_gate::action> finish_step(int64_t step) {
    return std::async(std::launch::async, [this, step] {
      completed.store(step);
      if (step >= action.load()) return gate.at_boundary(step);
      return step_gate::action{};
    });
  }
};

TEST_F(gate_fixture, a_trainer_before_the_target_accepts_and_saves_there_after_the_commit) {
  completed = 4;
  auto probe = gate.propose(6);
  EXPECT_TRUE(probe.accepted);
  EXPECT_EQ(probe.completed, 4);
  EXPECT_EQ(action.load(), 6);
  EXPECT_EQ(finish_step(5).get().kind, step_gate::action_kind::resume);
  auto at_target = finish_step(6);
  ASSERT_TRUE(trainer_waits_at(6)) << "must wait for the commit";
  gate.commit(6, true);
  ASSERT_EQ(at_target.wait_for(answer_bound), std::future_status::ready);
  auto act = at_target.get();
  EXPECT_EQ(act.kind, step_gate::action_kind::save);
  EXPECT_EQ(act.step, 6);
  EXPECT_TRUE(act.final_save);
}

TEST_F(gate_fixture, a_trainer_past_the_target_refuses) {
  completed = 9;
  auto probe = gate.propose(8);
  EXPECT_FALSE(probe.accepted);
  EXPECT_EQ(probe.completed, 9);
}

TEST_F(gate_fixture, a_trainer_stopped_exactly_at_the_target_accepts) {
  gate.propose(3);
  auto stopped = finish_step(3);
  ASSERT_TRUE(trainer_waits_at(3));
  // A re-proposal of the same step finds the trainer waiting there.
  EXPECT_TRUE(gate.propose(3).accepted);
  gate.commit(3, false);
  ASSERT_EQ(stopped.wait_for(answer_bound), std::future_status::ready);
  EXPECT_EQ(stopped.get().kind, step_gate::action_kind::save);
}

TEST_F(gate_fixture, a_later_proposal_releases_a_waiting_trainer) {
  gate.propose(3);
  auto stopped = finish_step(3);
  ASSERT_TRUE(trainer_waits_at(3));
  gate.propose(5);
  ASSERT_EQ(stopped.wait_for(answer_bound), std::future_status::ready);
  EXPECT_EQ(stopped.get().kind, step_gate::action_kind::resume);
  EXPECT_EQ(action.load(), 5);
}

TEST_F(gate_fixture, hold_stops_the_trainer_at_the_step_it_is_in) {
  completed = 4;
  EXPECT_EQ(gate.hold_next_step(), 5);
  EXPECT_EQ(action.load(), 5);
  auto held = finish_step(5);
  ASSERT_TRUE(trainer_waits_at(5));
  // A later commit releases it towards the committed step.
  gate.commit(7, false);
  ASSERT_EQ(held.wait_for(answer_bound), std::future_status::ready);
  EXPECT_EQ(held.get().kind, step_gate::action_kind::resume);
  EXPECT_EQ(finish_step(6).get().kind, step_gate::action_kind::resume);
  EXPECT_EQ(finish_step(7).get().kind, step_gate::action_kind::save);
}

TEST_F(gate_fixture, hold_finds_a_trainer_already_waiting) {
  gate.propose(3);
  auto stopped = finish_step(3);
  ASSERT_TRUE(trainer_waits_at(3));
  EXPECT_EQ(gate.hold_next_step(), 4) << "completed 3: it is in step 4 once released";
  ASSERT_EQ(stopped.wait_for(answer_bound), std::future_status::ready);
  EXPECT_EQ(stopped.get().kind, step_gate::action_kind::resume);
}

TEST_F(gate_fixture, after_a_non_final_save_training_resumes_without_a_target) {
  gate.propose(2);
  gate.commit(2, false);
  EXPECT_EQ(finish_step(2).get().kind, step_gate::action_kind::save);
  EXPECT_EQ(action.load(), step_gate::no_step);
  EXPECT_EQ(finish_step(3).get().kind, step_gate::action_kind::resume);
}

TEST_F(gate_fixture, a_final_save_carries_the_notice_deadline_and_a_backup_none) {
  constexpr int64_t deadline = 1'700'000'000'000;
  gate.propose(2);
  gate.commit(2, false, deadline);
  EXPECT_EQ(finish_step(2).get().deadline_unix_ms, 0);
  gate.propose(4);
  gate.commit(4, true, deadline);
  auto act = finish_step(4).get();
  EXPECT_TRUE(act.final_save);
  EXPECT_EQ(act.deadline_unix_ms, deadline);
}

TEST_F(gate_fixture, a_failure_stops_the_trainer_at_once_and_wakes_a_waiting_one) {
  gate.propose(3);
  auto stopped = finish_step(3);
  ASSERT_TRUE(trainer_waits_at(3));
  gate.fail(2, "boom", false);
  ASSERT_EQ(stopped.wait_for(answer_bound), std::future_status::ready);
  EXPECT_EQ(stopped.get().kind, step_gate::action_kind::fail);
  EXPECT_EQ(action.load(), 0);
  auto f = gate.failure();
  EXPECT_TRUE(f.failed);
  EXPECT_EQ(f.origin_rank, 2);
  EXPECT_EQ(f.message, "boom");
  EXPECT_EQ(finish_step(4).get().kind, step_gate::action_kind::fail);
}

TEST_F(gate_fixture, backup_saves_come_every_n_steps) {
  gate.set_backup_interval(3);
  EXPECT_EQ(action.load(), 3);
  EXPECT_EQ(finish_step(1).get().kind, step_gate::action_kind::resume);
  EXPECT_EQ(finish_step(2).get().kind, step_gate::action_kind::resume);
  auto act = finish_step(3).get();
  EXPECT_EQ(act.kind, step_gate::action_kind::save);
  EXPECT_FALSE(act.final_save);
  EXPECT_EQ(action.load(), 6);
}

// Every worker saves every backup step, held there or not; a held trainer
// saves it once the decision moved on, or saves there for the decision.
TEST_F(gate_fixture, a_trainer_held_at_a_backup_step_waits_for_the_decision_before_saving) {
  gate.set_backup_interval(3);
  completed = 2;
  ASSERT_EQ(gate.hold_next_step(), 3);
  auto held = finish_step(3);
  ASSERT_TRUE(trainer_waits_at(3)) << "no backup save past a pending decision";
  gate.commit(5, true);
  ASSERT_EQ(held.wait_for(answer_bound), std::future_status::ready);
  auto backup = held.get();
  EXPECT_EQ(backup.kind, step_gate::action_kind::save);
  EXPECT_FALSE(backup.final_save);
  EXPECT_EQ(finish_step(4).get().kind, step_gate::action_kind::resume);
  auto decided = finish_step(5).get();
  EXPECT_EQ(decided.kind, step_gate::action_kind::save);
  EXPECT_TRUE(decided.final_save);
}

TEST_F(gate_fixture, a_decision_at_a_backup_step_is_saved_once) {
  gate.set_backup_interval(3);
  completed = 2;
  ASSERT_EQ(gate.hold_next_step(), 3);
  auto held = finish_step(3);
  ASSERT_TRUE(trainer_waits_at(3));
  gate.commit(3, false);
  ASSERT_EQ(held.wait_for(answer_bound), std::future_status::ready);
  EXPECT_EQ(held.get().kind, step_gate::action_kind::save);
  EXPECT_EQ(action.load(), 6) << "on to the next backup";
  EXPECT_EQ(finish_step(4).get().kind, step_gate::action_kind::resume);
}

TEST_F(gate_fixture, await_exit_reports_the_code_a_failure_or_a_timeout) {
  EXPECT_FALSE(gate.await_exit(10ms).allowed);
  gate.allow_exit(42);
  auto decision = gate.await_exit(answer_bound);
  EXPECT_TRUE(decision.allowed);
  EXPECT_EQ(decision.code, 42);
}

TEST_F(gate_fixture, await_exit_returns_on_failure) {
  auto waiting = std::async(std::launch::async, [this] { return gate.await_exit(answer_bound); });
  gate.fail(1, "lost", true);
  ASSERT_EQ(waiting.wait_for(answer_bound), std::future_status::ready);
  EXPECT_FALSE(waiting.get().allowed);
}

}  // namespace
}  // namespace lifeboat
