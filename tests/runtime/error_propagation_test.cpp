// Errors: a step that throws on one random worker makes every worker raise
// the same error, naming the origin as "rank N", and exit 3 without hanging;
// a failure that came before a termination notice means no checkpoint at all.

#include <signal.h>

#include <random>

#include <gtest/gtest.h>

#include "tests/runtime/runtime_checks.hpp"
#include "tests/runtime/worker_cluster.hpp"

namespace lifeboat::test {
namespace {

constexpr int workers = 4;
// Far more steps than a failing run gets through: nobody finishes by accident.
constexpr int64_t endless_steps = 100000;
constexpr int64_t first_fail_step = 3;
constexpr int64_t last_fail_step = 25;
// Everybody must be gone this soon after the failure; heartbeats are not
// involved (the failure is reported), so a hang is the only way to miss it.
constexpr auto failure_exit_bound = 15s;

void random_step_throws(const std::vector<std::string>& mode_args) {
  auto seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng{seed};
  int origin = static_cast<int>(rng() % workers);
  int64_t step = first_fail_step + static_cast<int64_t>(rng() % (last_fail_step - first_fail_step));
  SCOPED_TRACE("rank " + std::to_string(origin) + " throws at step " + std::to_string(step));

  temp_dir dir{"error"};
  std::vector<std::string> args{
      "--steps",     std::to_string(endless_steps), "--step-ms",   "10",
      "--fail-rank", std::to_string(origin),        "--fail-step", std::to_string(step)};
  args.insert(args.end(), mode_args.begin(), mode_args.end());
  worker_cluster c{make_options(workers, dir.str(), args)};
  auto codes = c.finish(failure_exit_bound);
  ASSERT_TRUE(all_exited(codes, failure_exit_code, workers)) << c.transcript();

  auto injected = "injected failure at step " + std::to_string(step);
  for (int r = 0; r < workers; ++r) {
    auto errors = c.lines_containing(r, "error=");
    ASSERT_EQ(errors.size(), 1u) << "rank " << r << "\n" << c.transcript();
    // The origin raises its own exception; everyone else a peer_error that
    // names the origin: "rank N: <its message>".
    auto expected = r == origin ? "error=" + injected
                                : "error=rank " + std::to_string(origin) + ": " + injected;
    EXPECT_EQ(errors.front(), expected + " origin=" + std::to_string(origin)) << c.transcript();
    // The origin failed as its step threw, the others as they heard of it.
    EXPECT_EQ(c.lines_containing(r, "failed="), std::vector<std::string>{"failed=1"})
        << c.transcript();
    // The log line that says why the process ends names the origin too.
    auto named = r == origin ? "step " + std::to_string(step) + " failed: " + injected
                             : "rank " + std::to_string(origin) + " failed: " + injected;
    EXPECT_FALSE(c.lines_containing(r, named).empty())
        << "rank " << r << " has no line '" << named << "'\n"
        << c.transcript();
    EXPECT_TRUE(c.values(r, "saving").empty()) << c.transcript();
  }
  EXPECT_TRUE(committed_steps(dir.path()).empty());
}

TEST(error_propagation_test, a_random_step_throws_with_run) { random_step_throws({}); }

TEST(error_propagation_test, a_random_step_throws_in_lock_step) {
  random_step_throws({"--lockstep"});
}

TEST(error_propagation_test, a_random_step_throws_with_save_checkpoint_if_preempted) {
  random_step_throws({"--manual"});
}

// Rank 1's own code throws between its steps, outside run, and the exception
// unwinds past its handler: the handler reports it, and every other rank
// raises peer_error naming rank 1 and exits 3. Before, rank 1's handler met
// the others at the end instead, and they trained on without it (here for
// ever; with a collective, until the hang bound named rank 1 hung).
TEST(error_propagation_test, an_exception_unwinding_past_the_handler_reaches_every_worker) {
  temp_dir dir{"left"};
  worker_cluster c{make_options(workers, dir.str(),
                                {"--steps", std::to_string(endless_steps), "--step-ms", "10",
                                 "--fail-rank", "1", "--leave-step", "5"})};
  auto codes = c.finish(failure_exit_bound);
  ASSERT_EQ(codes.size(), static_cast<size_t>(workers)) << c.transcript();
  for (int r = 0; r < workers; ++r) {
    EXPECT_EQ(codes[static_cast<size_t>(r)], r == 1 ? 1 : failure_exit_code) << "rank " << r << "\n"
                                                                             << c.transcript();
    if (r == 1) continue;
    EXPECT_EQ(c.lines_containing(r, "error="),
              std::vector<std::string>{
                  "error=rank 1: an exception raised outside run() unwound past the handler "
                  "origin=1"})
        << "rank " << r << "\n"
        << c.transcript();
  }
  EXPECT_EQ(c.lines_containing(1, "left="),
            std::vector<std::string>{"left=evaluation broke after step 5"})
      << c.transcript();
}

// Rank 1's step throws while the others wait in a collective with it, which
// fails as rank 1's process ends: the peers' own errors are the echo of rank
// 1's failure. Every rank raises rank 1's error (peers as peer_error naming
// it), exits 3 through the scope guard (the failing rank too, without waiting
// for the service's broadcast to come back), and no peer reports a failure
// of its own. Repeated: which comes first on a peer, the broadcast or the
// collective's error, varies between runs.
TEST(error_propagation_test, a_collective_failing_with_the_peer_is_its_echo_not_a_new_failure) {
  constexpr int origin = 1;
  constexpr int fail_step = 5;
  constexpr int repetitions = 3;
  auto injected = "injected failure at step " + std::to_string(fail_step);
  for (int round = 0; round < repetitions; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    temp_dir dir{"echo"};
    worker_cluster c{make_options(
        3, dir.str(),
        {"--steps", std::to_string(endless_steps), "--step-ms", "10", "--fail-rank",
         std::to_string(origin), "--fail-step", std::to_string(fail_step), "--collective"})};
    auto codes = c.finish(failure_exit_bound);
    ASSERT_TRUE(all_exited(codes, failure_exit_code, 3)) << c.transcript();
    for (int r = 0; r < 3; ++r) {
      auto expected = r == origin ? "error=" + injected + " origin=1"
                                  : "error=rank 1: " + injected + " origin=1";
      EXPECT_EQ(c.lines_containing(r, "error="), std::vector<std::string>{expected})
          << c.transcript();
      EXPECT_TRUE(c.lines_containing(r, "exit_from=main").empty()) << c.transcript();
      if (r != origin) {
        EXPECT_TRUE(c.lines_containing(r, "failed: collective failed").empty()) << c.transcript();
      }
    }
  }
}

// Rank 1 fails at step 8 while rank 3 is parked inside step 3; once the
// others raised the error, rank 3 gets a SIGTERM and is let go. The failure
// came first, so nobody attempts a checkpoint and all exit 3.
TEST(error_propagation_test, no_checkpoint_after_a_failure_even_with_a_notice) {
  constexpr int origin = 1;
  constexpr int parked = 3;
  temp_dir dir{"error-then-notice"};
  worker_cluster c{
      make_options(workers, dir.str(),
                   {"--steps", std::to_string(endless_steps), "--step-ms", "10", "--fail-rank",
                    std::to_string(origin), "--fail-step", "8", "--fail-on-go", "--hold-rank",
                    std::to_string(parked), "--hold-step", "3"})};
  // The origin fails only once the parked worker is parked.
  ASSERT_TRUE(c.wait_line(parked, "hold=3")) << c.transcript();
  ASSERT_TRUE(c.wait_line(origin, "hold=8")) << c.transcript();
  c.worker(origin).send_line("go");
  ASSERT_TRUE(c.wait_line(origin, "error=")) << c.transcript();
  // The parked worker learnt of the failure (its exit controller says so)
  // before the notice comes.
  ASSERT_TRUE(c.wait_for([](int r, const std::string& line) {
    return r == parked && line.find("rank 1 failed: injected failure") != std::string::npos;
  })) << c.transcript();
  c.worker(parked).kill(SIGTERM);
  c.worker(parked).send_line("go");
  auto codes = c.finish(failure_exit_bound);
  EXPECT_TRUE(all_exited(codes, failure_exit_code, workers)) << c.transcript();
  for (int r = 0; r < workers; ++r) {
    EXPECT_TRUE(c.values(r, "saving").empty()) << c.transcript();
    EXPECT_TRUE(c.lines_containing(r, "agreed to save").empty()) << c.transcript();
  }
  EXPECT_TRUE(committed_steps(dir.path()).empty());
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{});
}

// Of three ranks only two start; rank 1 is killed once it joined, while
// rank 0 waits for the third to agree on the checkpoint to restore. The loss
// must end rank 0 at once, naming rank 1, not after the agreement's timeout.
TEST(error_propagation_test, a_peer_lost_while_agreeing_on_the_restore_step_ends_the_others) {
  constexpr int victim = 1;
  temp_dir dir{"lost-at-restore"};
  auto opts = make_options(3, dir.str(), {"--steps", "10"});
  opts.started = 2;
  worker_cluster c{opts};
  ASSERT_TRUE(c.wait_for([](int r, const std::string& line) {
    return r == victim && line.find("joined the coordination service") != std::string::npos;
  })) << c.transcript();
  c.worker(victim).kill(SIGKILL);
  auto codes = c.finish(failure_exit_bound);
  ASSERT_EQ(codes, (std::vector<int>{failure_exit_code, 128 + SIGKILL})) << c.transcript();
  auto errors = c.lines_containing(0, "error=");
  ASSERT_EQ(errors.size(), 1u) << c.transcript();
  // The agent's loss report and the restore barrier's refusal race; either names rank 1.
  EXPECT_TRUE(errors.front().find("rank 1 lost") != std::string::npos ||
              errors.front().find("rank 1 is lost") != std::string::npos)
      << c.transcript();
  EXPECT_TRUE(c.values(0, "restored").empty()) << c.transcript();
}

// Without a launcher rank 0's process hosts the coordination service (as
// under torchrun), so killing rank 0 takes the service with it. The others
// must name rank 0 as lost, as the exit code's contract asks ("rank N"), not
// a lost service that names no rank.
TEST(error_propagation_test, rank_0_killed_with_the_service_it_hosts_is_named_lost) {
  constexpr int world = 3;
  temp_dir dir{"service-host-lost"};
  worker_cluster c{make_options(world, dir.str(),
                                {"--steps", std::to_string(endless_steps), "--step-ms", "10"})};
  ASSERT_TRUE(c.wait_step(world - 1, first_fail_step)) << c.transcript();
  c.worker(0).kill(SIGKILL);
  auto codes = c.finish(failure_exit_bound);
  ASSERT_EQ(codes, (std::vector<int>{128 + SIGKILL, failure_exit_code, failure_exit_code}))
      << c.transcript();
  for (int r = 1; r < world; ++r) {
    auto errors = c.lines_containing(r, "error=");
    ASSERT_EQ(errors.size(), 1u) << c.transcript();
    EXPECT_EQ(errors.front(),
              "error=rank 0 lost: its coordination service is gone: connection closed origin=0")
        << c.transcript();
  }
}

}  // namespace
}  // namespace lifeboat::test
