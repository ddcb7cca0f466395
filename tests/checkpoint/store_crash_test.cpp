// Crash consistency: a writer process is killed with SIGKILL at random points
// of its saves, 50 times; after each kill a restore must find a complete,
// verified checkpoint (the previous or the new one), never a torn one.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>

#include <gtest/gtest.h>

#include "checkpoint/file_io.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/store.hpp"
#include "messages/errors.hpp"
#include "tests/checkpoint/pipe_barrier.hpp"
#include "tests/checkpoint/test_support.hpp"
#include "tests/checkpoint/worker_state.hpp"
#include "tests/support/build_tree.hpp"

namespace lifeboat::checkpoint {
namespace {

constexpr int kills = 50;
constexpr std::size_t state_bytes = 2 << 20;
// Long enough to cover start-up, restore and a few saves (each 20-100 ms with
// fsync on a busy 2-core machine). Under the sanitizers the writer's start and
// its saves take several times longer: in a fresh clone's ThreadSanitizer run
// all 50 kills within 250 ms came before its first commit.
#ifdef LIFEBOAT_SANITIZED
constexpr int max_kill_delay_us = 1000000;
#else
constexpr int max_kill_delay_us = 250000;
#endif

int count_partial_dirs(const std::string& dir) {
  int partial = 0;
  auto names = list_dir(dir);
  if (!names) return 0;
  for (auto& name : *names)
    if (parse_step_dir_name(name) && !testing::exists(dir + "/" + name + "/" + manifest_file_name))
      ++partial;
  return partial;
}

TEST(store_crash, sigkill_at_random_points_never_leaves_a_torn_checkpoint) {
  testing::temp_dir dir;
  auto seed = std::random_device{}();
  std::mt19937 rng{seed};
  std::uniform_int_distribution<int> delay_us{0, max_kill_delay_us};
  int64_t last_step = 0;
  int kills_after_a_commit = 0;
  int kills_leaving_a_partial = 0;
  for (int i = 0; i < kills; ++i) {
    int out[2];
    ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
    auto pid = testing::spawn({lifeboat::test::built(LIFEBOAT_CHECKPOINT_WORKER), "crash-writer",
                               dir.path(), std::to_string(state_bytes)},
                              {}, out[1]);
    ::close(out[1]);
    // The kill point is random: read the writer's progress until then.
    auto kill_at = std::chrono::steady_clock::now() + std::chrono::microseconds{delay_us(rng)};
    testing::line_reader progress{out[0]};
    bool committed = false;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          kill_at - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !progress.next(left)) break;
      committed = true;
    }
    ::kill(pid, SIGKILL);
    EXPECT_EQ(testing::wait_for(pid), 128 + SIGKILL);
    ::close(out[0]);
    kills_after_a_commit += committed ? 1 : 0;
    kills_leaving_a_partial += count_partial_dirs(dir.path()) > 0 ? 1 : 0;

    auto st = store::open({dir.path(), 0, 1});
    ASSERT_TRUE(st);
    testing::worker_state fresh{state_bytes};
    ::testing::internal::CaptureStderr();
    auto restored = st->restore_latest(fresh.registry);
    auto log = ::testing::internal::GetCapturedStderr();
    ASSERT_TRUE(restored) << "seed " << seed << ": " << describe(restored.error());
    EXPECT_EQ(log.find("corrupt"), std::string::npos) << "seed " << seed << ": " << log;
    if (!*restored) {
      ASSERT_EQ(last_step, 0) << "seed " << seed << ": a committed checkpoint disappeared";
      continue;
    }
    auto step = (*restored)->step;
    ASSERT_GE(step, last_step) << "seed " << seed;
    ASSERT_TRUE(fresh.holds(step)) << "seed " << seed << ": step " << step << " is torn";
    last_step = step;
  }
  std::printf(
      "%d kills: %d after a commit, %d left a partial checkpoint, last step %lld (seed %u)\n",
      kills, kills_after_a_commit, kills_leaving_a_partial, static_cast<long long>(last_step),
      seed);
  // The kills must have hit saves in progress and after commits, or the test proves nothing.
  EXPECT_GT(kills_after_a_commit, 0) << "seed " << seed;
  EXPECT_GT(kills_leaving_a_partial, 0) << "seed " << seed;
  EXPECT_GT(last_step, 0) << "seed " << seed;
}

}  // namespace
}  // namespace lifeboat::checkpoint
