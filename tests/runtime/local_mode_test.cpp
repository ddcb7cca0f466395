// A worker alone (no cluster variables at all): a SIGTERM it sends itself
// saves a checkpoint and exits 42; run again, it restores and finishes with
// every step run exactly once.

#include <gtest/gtest.h>

#include "tests/runtime/runtime_checks.hpp"
#include "tests/runtime/worker_cluster.hpp"

namespace lifeboat::test {
namespace {

constexpr int local = 0;
constexpr int64_t target_steps = 60;
constexpr int64_t signal_step = 17;

void self_sigterm_then_rerun(const std::vector<std::string>& mode_args) {
  temp_dir dir{"local"};
  std::vector<std::string> args{"--steps", std::to_string(target_steps), "--step-ms", "5"};
  args.insert(args.end(), mode_args.begin(), mode_args.end());
  auto first_args = args;
  first_args.insert(first_args.end(), {"--self-signal-step", std::to_string(signal_step)});
  worker_cluster first{make_options(local, dir.str(), first_args)};
  auto codes = first.finish();
  ASSERT_TRUE(all_exited(codes, restart_exit_code, 1)) << first.transcript();
  int64_t agreed = 0;
  ASSERT_TRUE(single_agreed_save(first, agreed));
  EXPECT_GE(agreed, signal_step);
  EXPECT_LT(agreed, target_steps);
  EXPECT_TRUE(ran_steps(first, 0, agreed));
  EXPECT_EQ(committed_steps(dir.path()), std::vector<int64_t>{agreed});
  // The rerun has no --self-signal-step: it must simply finish.
  EXPECT_TRUE(resumes_and_finishes(make_options(local, dir.str(), args, 1), agreed, target_steps));
}

TEST(local_mode_test, self_sigterm_with_run) { self_sigterm_then_rerun({}); }

TEST(local_mode_test, self_sigterm_with_save_checkpoint_if_preempted) {
  self_sigterm_then_rerun({"--manual"});
}

}  // namespace
}  // namespace lifeboat::test
