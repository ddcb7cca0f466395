// The preemption protocol end to end: a SIGTERM to one random worker at a
// random step makes all four save at one agreed step and exit 42; restarted
// over the same directory (fresh port and token), they restore that step and
// finish with every step run exactly once; the same through TLS 1.3.

#include <signal.h>

#include <random>

#include <gtest/gtest.h>

#include "checkpoint/layout.hpp"
#include "tests/runtime/runtime_checks.hpp"
#include "tests/runtime/worker_cluster.hpp"

namespace lifeboat::test {
namespace {

constexpr int workers = 4;
constexpr int64_t target_steps = 100;
// The SIGTERM lands after a random step in this range.
constexpr int64_t first_signal_step = 5;
constexpr int64_t last_signal_step = 40;

// The workers' options; with `tls`, LIFEBOAT_TLS=1: rank 0 hosts the service
// with TLS 1.3 and every worker joins through it.
cluster_options options(const temp_dir& dir, const std::vector<std::string>& args, int incarnation,
                        bool tls) {
  auto opts = make_options(workers, dir.str(), args, incarnation);
  if (tls) opts.extra_env.push_back("LIFEBOAT_TLS=1");
  return opts;
}

void preempt_random_worker_then_resume(const std::vector<std::string>& mode_args,
                                       bool tls = false) {
  auto seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng{seed};
  int victim = static_cast<int>(rng() % workers);
  int64_t at =
      first_signal_step + static_cast<int64_t>(rng() % (last_signal_step - first_signal_step));
  SCOPED_TRACE("SIGTERM to rank " + std::to_string(victim) + " after step " + std::to_string(at));

  temp_dir dir{"preemption"};
  std::vector<std::string> args{"--steps", std::to_string(target_steps), "--step-ms", "10"};
  args.insert(args.end(), mode_args.begin(), mode_args.end());
  worker_cluster first{options(dir, args, 0, tls)};
  ASSERT_TRUE(first.wait_step(victim, at)) << first.transcript();
  first.worker(victim).kill(SIGTERM);
  auto codes = first.finish();
  ASSERT_TRUE(all_exited(codes, restart_exit_code, workers)) << first.transcript();

  int64_t agreed = 0;
  ASSERT_TRUE(single_agreed_save(first, agreed));
  // The victim had finished step `at` (or was about to report it) when the
  // signal came, so the agreed step cannot be earlier.
  EXPECT_GE(agreed, at);
  EXPECT_LT(agreed, target_steps);
  // Nobody ran past the agreed step, nobody stopped short of it.
  EXPECT_TRUE(ran_steps(first, 0, agreed));
  ASSERT_EQ(committed_steps(dir.path()), std::vector<int64_t>{agreed});
  auto step_dir = dir.path() / checkpoint::step_dir_name(agreed);
  for (int r = 0; r < workers; ++r)
    EXPECT_TRUE(std::filesystem::exists(step_dir / checkpoint::shard_data_name(r, workers)))
        << "rank " << r;
  for (int r = 0; r < workers; ++r)
    EXPECT_EQ(
        first.lines_containing(r, "agreed to save at step " + std::to_string(agreed) + " (final)")
            .size(),
        1u)
        << first.transcript();

  if (tls) {
    EXPECT_EQ(first.lines_containing(0, "TLS 1.3 on every connection").size(), 1u)
        << first.transcript();
  }
  EXPECT_TRUE(resumes_and_finishes(options(dir, args, 1, tls), agreed, target_steps));
}

TEST(preemption_test, sigterm_to_a_random_worker_with_run_in_lock_step) {
  preempt_random_worker_then_resume({"--lockstep"});
}

TEST(preemption_test, sigterm_to_a_random_worker_with_run_without_lock_step) {
  preempt_random_worker_then_resume({});
}

TEST(preemption_test, sigterm_to_a_random_worker_with_save_checkpoint_if_preempted) {
  preempt_random_worker_then_resume({"--manual"});
}

TEST(preemption_test, sigterm_to_a_random_worker_with_tls_on_the_coordination_connections) {
  preempt_random_worker_then_resume({}, true);
}

}  // namespace
}  // namespace lifeboat::test
