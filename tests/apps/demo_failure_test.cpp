// lifeboat-demo's --fail-rank/--fail-step (DESIGN "lifeboat-demo"): rank R's
// step K throws; the error reaches every worker, every worker exits 3 and its
// error line names `rank R`, and the launcher gives up naming rank R and its
// error.

#include <chrono>
#include <csignal>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/apps/app_test_support.hpp"
#include "tests/support/build_tree.hpp"
#include "tests/support/loopback_port.hpp"

namespace {

using namespace lifeboat::test;

constexpr int workers = 3;
constexpr int64_t steps = 200;
constexpr int max_fail_step = 50;

TEST(demo_failure_test, an_injected_failure_makes_every_worker_exit_3_naming_the_rank) {
  scratch_dir dir{"apps-fail"};
  std::mt19937 rng{std::random_device{}()};
  int fail_rank = static_cast<int>(rng() % workers);
  int fail_step = 1 + static_cast<int>(rng() % max_fail_step);
  auto where = "--fail-rank " + std::to_string(fail_rank) + " --fail-step " +
               std::to_string(fail_step) + "\n";
  child_process run{
      {lifeboat::test::built(LIFEBOAT_LAUNCH), "--nproc", std::to_string(workers), "--max-restarts",
       "0", "--", lifeboat::test::built(LIFEBOAT_DEMO), "--checkpoint-dir", dir / "ckpt", "--steps",
       std::to_string(steps), "--state-mb", "1", "--step-ms", "2", "--fail-rank",
       std::to_string(fail_rank), "--fail-step", std::to_string(fail_step)},
      true,
      environment_with({{"LIFEBOAT_PLATFORM", "generic"}})};
  output_log log{run};
  log.read_all();
  EXPECT_EQ(exit_code(run), failure_exit_code) << where << log.text();
  auto pids = log.pids(0);
  ASSERT_EQ(pids.size(), static_cast<size_t>(workers)) << where << log.text();
  auto origin = "rank " + std::to_string(fail_rank);
  for (auto [rank, pid] : pids) {
    auto prefix = "rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + ")";
    // The launcher saw the exit code itself (waitpid), not a kill after a timeout.
    EXPECT_TRUE(log.contains("lifeboat-launch: " + prefix + " exited with code 3"))
        << where << log.text();
    auto error_line = "lifeboat-demo: rank=" + std::to_string(rank) + " error: ";
    if (rank == fail_rank) {
      EXPECT_TRUE(
          log.contains(error_line + "injected failure at step " + std::to_string(fail_step)))
          << where << log.text();
    } else {
      // A peer's error line names the worker the failure came from.
      EXPECT_TRUE(log.contains(error_line + origin + ": injected failure")) << where << log.text();
    }
  }
  // Every worker exited 3; the launcher names the one the failure began with.
  EXPECT_TRUE(log.contains("lifeboat-launch: giving up: " + origin +
                           " failed: injected failure at step " + std::to_string(fail_step)))
      << where << log.text();
  EXPECT_TRUE(log.digests(steps).empty()) << where << log.text();
}

// A worker whose coordination service is not there (a wrong
// LIFEBOAT_COORDINATOR, a rank 0 still importing its framework) says so while
// it keeps trying: the join waits minutes, and it used to wait in silence.
TEST(demo_failure_test, a_worker_that_cannot_reach_its_service_says_so_while_it_waits) {
  scratch_dir dir{"apps-unreachable"};
  auto where = "127.0.0.1:" + std::to_string(unused_port());
  child_process worker{
      {lifeboat::test::built(LIFEBOAT_DEMO), "--checkpoint-dir", dir / "ckpt", "--steps", "10"},
      true,
      environment_with({{"LIFEBOAT_PLATFORM", "generic"},
                        {"LIFEBOAT_RANK", "1"},
                        {"LIFEBOAT_WORLD_SIZE", "2"},
                        {"LIFEBOAT_COORDINATOR", where},
                        {"LIFEBOAT_LOCAL_DIR", "off"}})};
  // For "10 s" or a second more: the line comes with the first retry after 10 s.
  auto expected =
      "coordination_agent: warning: cannot reach the coordination service at " + where + " for ";
  output_log log{worker};
  log.read_until(expected, std::chrono::seconds{60});
  EXPECT_TRUE(log.contains(expected)) << log.text();
  EXPECT_TRUE(log.contains("); trying again for ")) << log.text();
}

// A start that waits for a worker that never comes (its process alive, its
// handler never constructed) says whom it waits for, long before the
// barrier's timeout names it.
TEST(demo_failure_test, a_start_waiting_for_a_worker_that_never_comes_says_whom_it_waits_for) {
  scratch_dir dir{"apps-never-joins"};
  child_process run{
      {lifeboat::test::built(LIFEBOAT_LAUNCH), "--nproc", "2", "--", "/bin/sh", "-c",
       "if [ \"$LIFEBOAT_RANK\" = 1 ]; then exec sleep 600; fi; exec \"$@\"", "sh",
       lifeboat::test::built(LIFEBOAT_DEMO), "--checkpoint-dir", dir / "ckpt", "--steps", "10"},
      true,
      environment_with({{"LIFEBOAT_PLATFORM", "generic"}})};
  // After "open for 10 s" or a second more on a loaded machine.
  auto expected =
      " s, waiting for rank 1 (rank 1 never joined: its worker has not "
      "constructed a handler, or cannot reach the coordination service)";
  output_log log{run};
  log.read_until(expected, std::chrono::seconds{60});
  EXPECT_TRUE(log.contains("coordination_service: barrier lifeboat/")) << log.text();
  EXPECT_TRUE(log.contains(" open for 1")) << log.text();
  EXPECT_TRUE(log.contains(expected)) << log.text();
  run.kill(SIGTERM);
  EXPECT_TRUE(run.wait_exit(std::chrono::seconds{30})) << log.text();
}

}  // namespace
