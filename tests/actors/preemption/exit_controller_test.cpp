// The exit controller over a real step gate: it lets the trainer exit only
// after the final commit, makes it raise on a failure naming the peer, and
// ends the process itself when the trainer does not (death tests: the
// watchdog calls _Exit).
#include "actors/preemption/exit_controller.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include <gtest/gtest.h>

#include "actors/atoms.hpp"
#include "actors/coordination/coordination_events.hpp"
#include "actors/preemption/protocol.hpp"
#include "actors/preemption/step_gate.hpp"
#include "actors/system_config.hpp"
#include "messages/errors.hpp"
#include "messages/preemption.pb.h"
#include "messages/status.pb.h"
#include "messages/wire.hpp"
#include "tests/support/actor_probe.hpp"

namespace lifeboat {
namespace {

using namespace std::chrono_literals;

constexpr int restart_code = 55;
using test::wait_bound;
// The watchdogs of the death tests: short, the trainer never comes.
constexpr auto short_bound = 50ms;

wire::SaveCommitted committed(int64_t step, bool final_save) {
  wire::SaveCommitted out;
  out.set_step(step);
  out.set_final_save(final_save);
  return out;
}

class exit_controller_test : public ::testing::Test {
 protected:
  void SetUp() override {
    exit_controller_config cfg;
    cfg.restart_code = restart_code;
    // Far beyond the test: the controller is stopped long before.
    cfg.failure_exit_bound = 600s;
    cfg.commit_exit_bound = 600s;
    controller_ = sys_.spawn(exit_controller, cfg, gate_);
  }

  void TearDown() override { self_->send_exit(controller_, caf::exit_reason::user_shutdown); }

  // A round trip after what was sent before: the controller has handled it.
  std::string state() { return test::status_of(self_, controller_).state(); }

  std::atomic<int64_t> completed_{0};
  std::atomic<int64_t> action_{step_gate::no_step};
  std::shared_ptr<step_gate> gate_ = std::make_shared<step_gate>(completed_, action_);
  system_config cfg_;
  caf::actor_system sys_{cfg_};
  caf::scoped_actor self_{sys_};
  exit_controller_actor controller_;
};

TEST_F(exit_controller_test, the_final_commit_lets_the_trainer_exit_with_the_restart_code) {
  EXPECT_EQ(state(), "waiting");
  self_->send(controller_, committed_atom::value, committed(12, false));
  // The first save of a grace period: training goes on.
  EXPECT_EQ(state(), "waiting");
  EXPECT_FALSE(gate_->await_exit(0ms).allowed);

  self_->send(controller_, committed_atom::value, committed(30, true));
  auto decision = gate_->await_exit(wait_bound);
  EXPECT_TRUE(decision.allowed);
  EXPECT_EQ(decision.code, restart_code);
  EXPECT_EQ(state(), "exiting: checkpoint at step 30 committed; exiting with restart code 55");
}

TEST_F(exit_controller_test, a_failure_makes_the_trainer_raise_naming_the_peer) {
  self_->send(controller_, peer_failure{2, 1, "step 9 threw", false});
  EXPECT_EQ(state(), "exiting: rank 2 failed: step 9 threw");
  auto failure = gate_->failure();
  EXPECT_TRUE(failure.failed);
  EXPECT_EQ(failure.origin_rank, 2);
  EXPECT_EQ(failure.message, "step 9 threw");
  EXPECT_FALSE(failure.lost);
  // A commit after the failure does not turn it into a restart.
  self_->send(controller_, committed_atom::value, committed(30, true));
  EXPECT_EQ(state(), "exiting: rank 2 failed: step 9 threw");
  EXPECT_FALSE(gate_->await_exit(0ms).allowed);
}

TEST_F(exit_controller_test, a_lost_peer_is_named_as_lost_and_the_first_reason_stands) {
  self_->send(controller_, peer_failure{1, 0, "no heartbeat for 3000 ms", true});
  self_->send(controller_, peer_failure{3, 1, "later", false});
  EXPECT_EQ(state(), "exiting: rank 1 lost: no heartbeat for 3000 ms");
  EXPECT_EQ(gate_->failure().origin_rank, 1);
  EXPECT_TRUE(gate_->failure().lost);
}

// Rank -1 is the coordination service: its message names it, not "rank -1".
TEST_F(exit_controller_test, a_lost_service_is_named_by_its_message) {
  self_->send(controller_,
              peer_failure{-1, 0, "coordination service lost: connection closed", true});
  EXPECT_EQ(state(), "exiting: coordination service lost: connection closed");
  EXPECT_EQ(gate_->failure().origin_rank, -1);
}

// A hung job's ranks write their stacks while their training threads are
// still where they were stuck: the gate, which releases a thread from a
// failed barrier, fails only after.
TEST_F(exit_controller_test, a_hangs_stacks_are_written_before_the_trainer_is_released) {
  std::atomic<int> dumps{0};
  std::atomic<bool> failed_at_dump{false};
  exit_controller_config cfg;
  cfg.rank = 1;
  cfg.dump_stacks = [&] {
    ++dumps;
    failed_at_dump = gate_->failure().failed;
  };
  // Far beyond the test: the controller is stopped long before.
  cfg.hung_exit_delay = 600s;
  auto hung = sys_.spawn(exit_controller, cfg, gate_);
  self_->send(hung, peer_failure{-1, static_cast<int32_t>(errc::hung), "hang: job", false});
  EXPECT_EQ(test::status_of(self_, hung).state(), "exiting: hang: job");
  EXPECT_EQ(dumps.load(), 1);
  EXPECT_FALSE(failed_at_dump.load());
  EXPECT_TRUE(gate_->failure().failed);
  self_->send_exit(hung, caf::exit_reason::user_shutdown);
}

// A controller over a fresh gate in a process of its own: `trainer` plays
// the training thread, then the process waits for the controller to end it.
[[noreturn]] void run_controller(
    exit_controller_config ecfg,
    const std::function<void(caf::scoped_actor&, const exit_controller_actor&, step_gate&)>&
        trainer) {
  std::atomic<int64_t> completed{0};
  std::atomic<int64_t> action{step_gate::no_step};
  auto gate = std::make_shared<step_gate>(completed, action);
  system_config cfg;
  caf::actor_system sys{cfg};
  ecfg.restart_code = restart_code;
  auto controller = sys.spawn(exit_controller, ecfg, gate);
  caf::scoped_actor self{sys};
  trainer(self, controller, *gate);
  for (;;) ::pause();
}

// What the death tests' dump_stacks writes in place of a stack.
constexpr const char* stack_marker = "(the training thread's stack)";

// The process the trainer never ends: the watchdog ends it with `code`,
// after the training thread's stack.
[[noreturn]] void run_until_watchdog(bool fail) {
  exit_controller_config ecfg;
  ecfg.failure_exit_bound = short_bound;
  ecfg.commit_exit_bound = short_bound;
  ecfg.dump_stacks = [] { std::fprintf(stderr, "%s\n", stack_marker); };
  // A stuck trainer: only the watchdog ends this.
  run_controller(
      ecfg, [fail](caf::scoped_actor& self, const exit_controller_actor& controller, step_gate&) {
        if (fail)
          self->send(controller, peer_failure{2, 1, "boom", false});
        else
          self->send(controller, committed_atom::value, committed(8, true));
      });
}

// The trainer asks to exit (`failed` as it says), after the final commit
// when `commit` is set; the controller picks the code and ends the process.
[[noreturn]] void ask_to_exit(bool commit, bool failed) {
  exit_controller_config ecfg;
  // Far beyond the test: only the request ends the process.
  ecfg.commit_exit_bound = 600s;
  run_controller(ecfg, [commit, failed](caf::scoped_actor& self,
                                        const exit_controller_actor& controller, step_gate& gate) {
    if (commit) {
      self->send(controller, committed_atom::value, committed(8, true));
      gate.await_exit(wait_bound);
    }
    self->send(controller, exit_now_atom::value, failed);
  });
}

class exit_controller_death_test : public ::testing::Test {
 protected:
  // The child starts this binary anew: the parent has threads already.
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(exit_controller_death_test, a_trainer_stuck_after_a_failure_is_ended_with_code_3) {
  EXPECT_EXIT(
      run_until_watchdog(true), ::testing::ExitedWithCode(failure_exit_code),
      "the trainer did not exit in time \\(rank 2 failed: boom\\); exiting with code 3.*"
      "the stack of this rank's training thread follows.*\\(the training thread's stack\\)");
}

TEST_F(exit_controller_death_test,
       a_trainer_stuck_after_the_final_commit_is_ended_with_the_restart_code) {
  EXPECT_EXIT(run_until_watchdog(false), ::testing::ExitedWithCode(restart_code),
              "the trainer did not exit in time .*; exiting with code 55.*"
              "\\(the training thread's stack\\)");
}

TEST_F(exit_controller_death_test,
       a_trainer_that_asks_after_the_final_commit_exits_with_the_restart_code) {
  EXPECT_EXIT(ask_to_exit(true, false), ::testing::ExitedWithCode(restart_code), "");
}

TEST_F(exit_controller_death_test, a_trainer_that_asks_before_any_commit_exits_with_code_3) {
  EXPECT_EXIT(ask_to_exit(false, false), ::testing::ExitedWithCode(failure_exit_code), "");
}

TEST_F(exit_controller_death_test, a_trainer_that_failed_exits_with_code_3_even_after_the_commit) {
  EXPECT_EXIT(ask_to_exit(true, true), ::testing::ExitedWithCode(failure_exit_code), "");
}

}  // namespace
}  // namespace lifeboat
