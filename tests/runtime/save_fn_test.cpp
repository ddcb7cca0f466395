// A configured save_fn replaces lifeboat's own checkpoint files: lifeboat
// writes nothing, and calls save_fn exactly once per save on every worker,
// all at the agreed step.

#include <signal.h>

#include <gtest/gtest.h>

#include "tests/runtime/runtime_checks.hpp"
#include "tests/runtime/worker_cluster.hpp"

namespace lifeboat::test {
namespace {

constexpr int workers = 4;
constexpr int64_t endless_steps = 100000;

// What save_fn (runtime_test_worker --save-fn) writes: one marker per rank and step.
std::vector<std::string> markers(const std::vector<int64_t>& steps) {
  std::vector<std::string> out;
  for (auto step : steps)
    for (int r = 0; r < workers; ++r)
      out.push_back("user-rank-" + std::to_string(r) + "-step-" + std::to_string(step));
  std::sort(out.begin(), out.end());
  return out;
}

TEST(save_fn_test, called_once_on_every_worker_and_no_lifeboat_files) {
  temp_dir dir{"save-fn"};
  worker_cluster c{
      make_options(workers, dir.str(),
                   {"--steps", std::to_string(endless_steps), "--step-ms", "10", "--save-fn"})};
  ASSERT_TRUE(c.wait_step(1, 10)) << c.transcript();
  c.worker(1).kill(SIGTERM);
  auto codes = c.finish();
  ASSERT_TRUE(all_exited(codes, restart_exit_code, workers)) << c.transcript();
  int64_t agreed = 0;
  ASSERT_TRUE(single_agreed_save(c, agreed, "saved"));
  // lifeboat never snapshotted the state itself.
  ASSERT_TRUE(saves_at(c, {}, "saving"));
  EXPECT_TRUE(ran_steps(c, 0, agreed));
  EXPECT_EQ(entries(dir.path()), markers({agreed}));
}

// Without a store there is no restore agreement, yet a notice that comes
// before a worker joined must still reach it: every worker waits for all to
// join before it trains (the round would otherwise never end).
TEST(save_fn_test, a_notice_before_a_worker_joined_still_saves_everywhere) {
  constexpr int late = 3;
  constexpr int noticed = 1;
  temp_dir dir{"save-fn-late"};
  worker_cluster c{make_options(workers, dir.str(),
                                {"--steps", std::to_string(endless_steps), "--step-ms", "10",
                                 "--save-fn", "--late-rank", std::to_string(late)})};
  ASSERT_TRUE(c.wait_line(late, "late")) << c.transcript();
  // Rank 1 has joined, so its signal handler is in place.
  ASSERT_TRUE(c.wait_for([](int r, const std::string& line) {
    return r == 0 && line.find("rank " + std::to_string(noticed) + " joined") != std::string::npos;
  })) << c.transcript();
  c.worker(noticed).kill(SIGTERM);
  c.worker(late).send_line("go");
  auto codes = c.finish();
  ASSERT_TRUE(all_exited(codes, restart_exit_code, workers)) << c.transcript();
  int64_t agreed = 0;
  ASSERT_TRUE(single_agreed_save(c, agreed, "saved"));
  EXPECT_EQ(entries(dir.path()), markers({agreed}));
}

// The grace period leaves room for a save after the first beyond the exit
// margin (at least 1 s) and the final save's cycle, under ThreadSanitizer too:
// with 1.5 s the first save was sometimes the final one there, and with 4 s
// once, beside the checkpoint library's tests (whose files load the host).
TEST(save_fn_test, called_once_per_save_in_a_grace_period) {
  temp_dir dir{"save-fn-grace"};
  worker_cluster c{make_options(workers, dir.str(),
                                {"--steps", std::to_string(endless_steps), "--step-ms", "10",
                                 "--grace-ms", "8000", "--save-fn"})};
  ASSERT_TRUE(c.wait_step(3, 10)) << c.transcript();
  c.worker(3).kill(SIGTERM);
  auto codes = c.finish();
  ASSERT_TRUE(all_exited(codes, restart_exit_code, workers)) << c.transcript();
  auto saves = c.values(0, "saved");
  ASSERT_EQ(saves.size(), 2u) << c.transcript();
  ASSERT_TRUE(saves_at(c, saves, "saved"));
  EXPECT_LT(saves[0], saves[1]);
  ASSERT_TRUE(saves_at(c, {}, "saving"));
  EXPECT_EQ(entries(dir.path()), markers(saves));
}

}  // namespace
}  // namespace lifeboat::test
