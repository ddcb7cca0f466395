// Periodic backups (save_every_seconds) for failures that come without any
// notice: rank 0 picks the step, every worker saves at it and trains on; a
// worker killed outright later costs only the steps since the last backup.

#include <signal.h>

#include <gtest/gtest.h>

#include "tests/runtime/runtime_checks.hpp"
#include "tests/runtime/worker_cluster.hpp"

namespace lifeboat::test {
namespace {

constexpr int workers = 3;
constexpr int victim = 2;
constexpr int64_t endless_steps = 100000;
constexpr int64_t steps_after_restart = 20;
constexpr size_t backups_before_the_kill = 2;

std::vector<std::string> backup_args(int64_t steps) {
  return {"--steps", std::to_string(steps), "--step-ms", "10", "--lockstep", "--save-every-s", "1"};
}

TEST(backup_test, backups_every_second_let_a_failure_without_notice_resume_from_the_last) {
  temp_dir dir{"backup"};
  worker_cluster c{make_options(workers, dir.str(), backup_args(endless_steps))};
  // The second backup committed on rank 0, which writes the manifests.
  ASSERT_TRUE(c.wait_for([&](int, const std::string&) {
    auto saves = c.values(0, "saving");
    if (saves.size() < backups_before_the_kill) return false;
    auto committed =
        "checkpoint at step " + std::to_string(saves[backups_before_the_kill - 1]) + " committed";
    return !c.lines_containing(0, committed).empty();
  })) << c.transcript();
  c.worker(victim).kill(SIGKILL);
  auto codes = c.finish();
  ASSERT_EQ(codes, (std::vector<int>{failure_exit_code, failure_exit_code, 128 + SIGKILL}))
      << c.transcript();

  // Every worker saved at the same steps, and trained on after each.
  auto first = c.values(0, "saving");
  ASSERT_GE(first.size(), backups_before_the_kill);
  for (int r = 0; r < workers; ++r) {
    auto saves = c.values(r, "saving");
    ASSERT_GE(saves.size(), backups_before_the_kill) << c.transcript();
    for (size_t i = 0; i < backups_before_the_kill; ++i) EXPECT_EQ(saves[i], first[i]);
    EXPECT_FALSE(c.lines_containing(r, "(backup)").empty()) << c.transcript();
    EXPECT_TRUE(c.lines_containing(r, "(final)").empty()) << c.transcript();
  }
  EXPECT_LT(first[0], first[1]);
  for (int r = 0; r < workers - 1; ++r)
    EXPECT_FALSE(c.lines_containing(r, "rank 2 lost").empty()) << c.transcript();

  auto committed = committed_steps(dir.path());
  ASSERT_FALSE(committed.empty());
  auto last = committed.back();
  EXPECT_GE(last, first[backups_before_the_kill - 1]);
  EXPECT_TRUE(resumes_and_finishes(
      make_options(workers, dir.str(), backup_args(last + steps_after_restart), 1), last,
      last + steps_after_restart));
}

}  // namespace
}  // namespace lifeboat::test
