// Workers at different steps: the agreed step is the furthest worker's
// completed step + 1, not "one past the one that got the notice", and every
// worker saves exactly there.

#include <signal.h>

#include <gtest/gtest.h>

#include "tests/runtime/runtime_checks.hpp"
#include "tests/runtime/worker_cluster.hpp"

namespace lifeboat::test {
namespace {

constexpr int workers = 4;
constexpr int fast_rank = 2;
// The fast rank runs ahead without delay to this step and parks inside the
// next one, so its completed step is exactly `fast_completed` while the
// others, 40 ms a step, are far behind.
constexpr int64_t fast_completed = 30;
constexpr int64_t slow_step_ms = 40;
// The slow ranks must still be this far behind when the notice goes out.
constexpr int64_t min_lead = 10;

TEST(step_agreement_test, the_agreed_step_is_the_furthest_step_plus_one) {
  temp_dir dir{"agreement"};
  worker_cluster c{
      make_options(workers, dir.str(),
                   {"--steps", "100000", "--step-ms", std::to_string(slow_step_ms), "--uneven-rank",
                    std::to_string(fast_rank), "--uneven-step-ms", "0", "--hold-rank",
                    std::to_string(fast_rank), "--hold-step", std::to_string(fast_completed + 1)})};
  ASSERT_TRUE(c.wait_line(fast_rank, "hold=" + std::to_string(fast_completed + 1)))
      << c.transcript();
  // The notice goes to a slow rank, which knows nothing of the fast one's step.
  c.worker(0).kill(SIGTERM);
  int64_t agreed = fast_completed + 1;
  auto agreed_line = "agreed to save at step " + std::to_string(agreed) + " (final)";
  ASSERT_TRUE(c.wait_for([&](int r, const std::string& line) {
    return r == fast_rank && line.find(agreed_line) != std::string::npos;
  })) << c.transcript();
  // The slow ranks were far behind when the step was agreed.
  for (int r = 0; r < workers; ++r) {
    if (r == fast_rank) continue;
    auto steps = c.values(r, "step");
    EXPECT_LT(steps.empty() ? 0 : steps.back(), fast_completed - min_lead) << c.transcript();
  }
  c.worker(fast_rank).send_line("go");
  auto codes = c.finish();
  ASSERT_TRUE(all_exited(codes, restart_exit_code, workers)) << c.transcript();
  EXPECT_TRUE(saves_at(c, {agreed}));
  EXPECT_TRUE(ran_steps(c, 0, agreed));
  EXPECT_EQ(committed_steps(dir.path()), std::vector<int64_t>{agreed});
}

}  // namespace
}  // namespace lifeboat::test
