// Training that ends without a notice: every worker exits 0 promptly after
// its last step, and lifeboat wrote no checkpoint.

#include <gtest/gtest.h>

#include "tests/runtime/runtime_checks.hpp"
#include "tests/runtime/worker_cluster.hpp"

namespace lifeboat::test {
namespace {

constexpr int64_t target_steps = 30;
// From the last worker's last step to every process gone: the shutdown
// barrier and the leave, nothing that waits on a timeout.
constexpr auto prompt_exit = 5s;

void finishes_without_a_notice(int world_size) {
  temp_dir dir{"shutdown"};
  worker_cluster c{make_options(world_size, dir.str(),
                                {"--steps", std::to_string(target_steps), "--step-ms", "5"})};
  // wait_for looks at every line read so far on each pass: count, not accumulate.
  ASSERT_TRUE(c.wait_for([&](int, const std::string&) {
    for (int r = 0; r < c.size(); ++r)
      if (c.lines_containing(r, "done total=").empty()) return false;
    return true;
  })) << c.transcript();
  auto all_done = std::chrono::steady_clock::now();
  auto codes = c.finish();
  EXPECT_LT(std::chrono::steady_clock::now() - all_done, prompt_exit);
  EXPECT_TRUE(all_exited(codes, 0, static_cast<size_t>(c.size()))) << c.transcript();
  for (int r = 0; r < c.size(); ++r)
    EXPECT_EQ(c.lines_containing(r, "done total="),
              std::vector<std::string>{"done total=30 applied=30"})
        << c.transcript();
  EXPECT_TRUE(ran_steps(c, 0, target_steps));
  EXPECT_TRUE(saves_at(c, {}));
  EXPECT_TRUE(committed_steps(dir.path()).empty());
}

TEST(shutdown_test, four_workers_exit_zero_without_a_notice) { finishes_without_a_notice(4); }

TEST(shutdown_test, a_local_worker_exits_zero_without_a_notice) { finishes_without_a_notice(0); }

}  // namespace
}  // namespace lifeboat::test
