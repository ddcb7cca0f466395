// The checkpoint-ready barrier of a cluster: an NCCL all-reduce on a
// communicator split from the trainer's when every worker handed one over and
// can use it, the coordination service's barrier otherwise.

#include <signal.h>

#include <gtest/gtest.h>

#include "checkpoint/device_memory.hpp"
#include "messages/errors.hpp"
#include "tests/runtime/runtime_checks.hpp"
#include "tests/runtime/worker_cluster.hpp"

#ifdef LIFEBOAT_HAVE_NCCL
#include "tests/support/build_tree.hpp"
#include "tests/support/nccl_ranks.hpp"
#endif

namespace lifeboat::test {
namespace {

constexpr int workers = 2;
constexpr int64_t signal_step = 3;
// Training outlasts the test unless a notice ends it.
constexpr int64_t endless = 100000;

// Hands a communicator lifeboat cannot use to `rank` (-1: every rank),
// preempts, and checks that the workers committed through the coordination
// service and said why in a line that contains `why`.
void falls_back_to_the_coordination_barrier(int rank, const std::string& why) {
  temp_dir dir{"ready-barrier"};
  std::vector<std::string> args{"--steps", std::to_string(endless), "--step-ms",
                                "10",      "--unusable-nccl-rank",  std::to_string(rank)};
  worker_cluster c{make_options(workers, dir.str(), args)};
  ASSERT_TRUE(c.wait_step(1, signal_step)) << c.transcript();
  c.worker(1).kill(SIGTERM);
  ASSERT_TRUE(all_exited(c.finish(), restart_exit_code, workers)) << c.transcript();
  int64_t agreed = 0;
  ASSERT_TRUE(single_agreed_save(c, agreed));
  EXPECT_EQ(committed_steps(dir.path()), std::vector<int64_t>{agreed});
  for (int r = 0; r < workers; ++r)
    EXPECT_EQ(c.lines_containing(r,
                                 "checkpoint-ready barrier through the coordination service, "
                                 "not NCCL: " +
                                     why)
                  .size(),
              1u)
        << c.transcript();
}

TEST(ready_barrier_test, a_communicator_no_worker_can_use_leaves_the_coordination_barrier) {
  if (!checkpoint::device::available())
    GTEST_SKIP() << "a CUDA device is present: the NCCL barrier is used, see the test below";
  falls_back_to_the_coordination_barrier(-1, "rank 0: unavailable: NCCL barrier: ");
}

// Rank 0 makes no split call, so rank 1 must not wait in one: without the
// first exchange it waited there until the restore agreement's 120 s bound.
// With a GPU or without, rank 1's communicator is never touched.
TEST(ready_barrier_test, a_communicator_one_worker_lacks_leaves_the_coordination_barrier) {
  falls_back_to_the_coordination_barrier(1, "rank 0: no NCCL communicator was handed over");
}

#ifdef LIFEBOAT_HAVE_NCCL
TEST(ready_barrier_test, workers_that_hand_over_their_nccl_communicator_commit_through_it) {
  if (auto err = checkpoint::device::available())
    GTEST_SKIP() << "no usable CUDA device, GPU test skipped: " << describe(err);
  temp_dir dir{"ready-barrier-nccl"};
  auto options = [&](int64_t steps, int incarnation) {
    auto opts = make_options(workers, dir.str(),
                             {"--steps", std::to_string(steps), "--step-ms", "10"}, incarnation);
    opts.worker = lifeboat::test::built(LIFEBOAT_NCCL_WORKER);
    opts.extra_env.push_back("LIFEBOAT_TEST_NCCL_ID=" + new_nccl_id());
    return opts;
  };
  int64_t saved = 0;
  {
    worker_cluster first{options(endless, 0)};
    ASSERT_TRUE(first.wait_step(0, signal_step)) << first.transcript();
    first.worker(1).kill(SIGTERM);
    ASSERT_TRUE(all_exited(first.finish(), restart_exit_code, workers)) << first.transcript();
    for (int r = 0; r < workers; ++r)
      EXPECT_EQ(first.lines_containing(r, "checkpoint-ready barrier: NCCL all-reduce").size(), 1u)
          << first.transcript();
    auto steps = committed_steps(dir.path());
    ASSERT_EQ(steps.size(), 1u) << first.transcript();
    saved = steps[0];
  }
  // The weights on the GPU come back as they were at the saved step.
  worker_cluster second{options(saved + 2, 1)};
  auto restored = "restored=" + std::to_string(saved) + " weights=" + std::to_string(saved);
  for (int r = 0; r < workers; ++r)
    EXPECT_EQ(second.wait_line(r, "restored="), restored) << second.transcript();
  ASSERT_TRUE(all_exited(second.finish(), 0, workers)) << second.transcript();
  for (int r = 0; r < workers; ++r)
    EXPECT_EQ(second.values(r, "done total"), std::vector<int64_t>{saved + 2});
}
#endif

}  // namespace
}  // namespace lifeboat::test
