// Frequent notices: a termination_watcher_fn that keeps returning true on
// every worker, and several SIGTERMs on top, still make exactly one save per
// decision; preempted again and again, the job still finishes exactly.

#include <signal.h>

#include <gtest/gtest.h>

#include "tests/runtime/runtime_checks.hpp"
#include "tests/runtime/worker_cluster.hpp"

namespace lifeboat::test {
namespace {

constexpr int workers = 4;
constexpr int64_t target_steps = 40;
// The watcher fires this many steps after each start's restored step.
constexpr int64_t watcher_after = 15;
// Each start runs at least watcher_after steps before its save, so the job
// needs at most this many starts; one more would be a lost decision.
constexpr int max_starts = 4;
// The first start's decision must land within the steps after its notice
// ((40 - 15) x 20 ms): with 10 ms steps it once came after the last step
// under ThreadSanitizer beside other tests.
constexpr const char* step_ms = "20";

TEST(notices_test, repeated_notices_save_once_per_decision_and_training_finishes) {
  temp_dir dir{"notices"};
  std::vector<std::string> args{"--steps",         std::to_string(target_steps),
                                "--step-ms",       step_ms,
                                "--watcher-rank",  "-1",
                                "--watcher-after", std::to_string(watcher_after),
                                "--poll-ms",       "5"};
  int64_t restored = 0;
  int preempted = 0;
  for (int start = 0; start < max_starts; ++start) {
    SCOPED_TRACE("start " + std::to_string(start));
    worker_cluster c{make_options(workers, dir.str(), args, start)};
    if (start == 0) {
      // Signals on top of the watcher: three to rank 1, one to rank 2.
      ASSERT_TRUE(c.wait_step(1, watcher_after)) << c.transcript();
      for (int i = 0; i < 3; ++i) c.worker(1).kill(SIGTERM);
      c.worker(2).kill(SIGTERM);
    }
    auto codes = c.finish();
    for (int r = 0; r < workers; ++r)
      ASSERT_EQ(c.values(r, "restored"), std::vector<int64_t>{restored}) << c.transcript();
    if (codes == std::vector<int>(workers, 0)) {
      for (int r = 0; r < workers; ++r)
        EXPECT_EQ(c.lines_containing(r, "done total="),
                  std::vector<std::string>{"done total=40 applied=40"})
            << c.transcript();
      EXPECT_TRUE(ran_steps(c, restored, target_steps));
      EXPECT_TRUE(saves_at(c, {}));
      // 40 steps, a notice 15 steps into each start: the signalled first
      // start is preempted, and so is the second unless its decision lands
      // after its last step (a slow host, a sanitizer), which is no loss.
      EXPECT_GE(preempted, 1) << c.transcript();
      EXPECT_LE(preempted, 2) << c.transcript();
      return;
    }
    ASSERT_TRUE(all_exited(codes, restart_exit_code, workers)) << c.transcript();
    int64_t agreed = 0;
    ASSERT_TRUE(single_agreed_save(c, agreed));
    EXPECT_GE(agreed, restored + watcher_after);
    EXPECT_TRUE(ran_steps(c, restored, agreed));
    ASSERT_FALSE(committed_steps(dir.path()).empty());
    EXPECT_EQ(committed_steps(dir.path()).back(), agreed);
    restored = agreed;
    ++preempted;
  }
  FAIL() << "the job did not finish in " << max_starts << " starts";
}

// With a grace period, notices keep coming during the countdown (the watcher
// on every rank, and more signals): still exactly two saves per worker, the
// first and the final one.
TEST(notices_test, repeated_notices_during_a_grace_period_make_exactly_two_saves) {
  // Two saves fit only while the grace period exceeds the exit margin (1 s)
  // and twice the estimated save cycle (round, step, checkpoint, exit); with
  // 1.5 s, ThreadSanitizer's slower cycle beside busy loops left no room, and
  // the first save was rightly the final one.
  constexpr const char* grace_ms = "4000";
  temp_dir dir{"notices-grace"};
  worker_cluster c{
      make_options(workers, dir.str(),
                   {"--steps", "100000", "--step-ms", "10", "--grace-ms", grace_ms,
                    "--watcher-rank", "-1", "--watcher-after", "10", "--poll-ms", "5"})};
  ASSERT_TRUE(c.wait_for([](int r, const std::string& line) {
    return r == 0 && value_of(line, "saving");
  })) << c.transcript();
  for (int r = 0; r < workers; ++r) c.worker(r).kill(SIGTERM);
  c.worker(3).kill(SIGTERM);
  auto codes = c.finish();
  ASSERT_TRUE(all_exited(codes, restart_exit_code, workers)) << c.transcript();
  auto saves = c.values(0, "saving");
  ASSERT_EQ(saves.size(), 2u) << c.transcript();
  EXPECT_TRUE(saves_at(c, saves));
  EXPECT_EQ(committed_steps(dir.path()), saves) << c.transcript();
  EXPECT_TRUE(ran_steps(c, 0, saves[1]));
}

}  // namespace
}  // namespace lifeboat::test
