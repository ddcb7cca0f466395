// Crash consistency: a writer process is killed with SIGKILL at random points
// of its saves, 50 times; after each kill a restore must find a complete,
// verified checkpoint (the previous or the new one), never a torn one. The
// same for a writer through both tiers (memory tier, then directory): killed
// at least 20 times in each tier's write (the memory tier's into a spare,
// when one was allocated in time), a restore from the fastest tier never
// reads a torn copy.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <random>

#include <gtest/gtest.h>

#include "checkpoint/file_io.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/memory_tier.hpp"
#include "checkpoint/store.hpp"
#include "checkpoint/tiered_restore.hpp"
#include "messages/errors.hpp"
#include "tests/checkpoint/pipe_barrier.hpp"
#include "tests/checkpoint/test_support.hpp"
#include "tests/checkpoint/worker_state.hpp"
#include "tests/support/build_tree.hpp"

namespace lifeboat::checkpoint {
namespace {

constexpr int kills = 50;
constexpr int kills_per_tier = 20;
// The tiered writer is killed until each tier's write was hit kills_per_tier
// times (a kill that left a partial step in it), at most this often.
constexpr int max_tiered_kills = 400;
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

// Starts the checkpoint test worker with `args`, reads its progress and
// kills it with SIGKILL `delay` after its start. Whether it committed a step
// before; a failed start or an exit other than the kill fails the test.
bool kill_writer_after(const std::vector<std::string>& args, std::chrono::microseconds delay) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe2 failed";
    return false;
  }
  std::vector<std::string> argv{lifeboat::test::built(LIFEBOAT_CHECKPOINT_WORKER)};
  argv.insert(argv.end(), args.begin(), args.end());
  auto pid = testing::spawn(argv, {}, out[1]);
  ::close(out[1]);
  auto kill_at = std::chrono::steady_clock::now() + delay;
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
  return committed;
}

// A restore after a kill (`restore` fills the registry it is given): it
// succeeds without a word of corruption, and the step it restored is whole
// (bit-exact) and not older than `last_step`, which it then becomes.
void expect_whole_restore(
    const std::function<caf::expected<std::optional<checkpoint_info>>(state_registry&)>& restore,
    unsigned seed, int64_t& last_step) {
  testing::worker_state fresh{state_bytes};
  ::testing::internal::CaptureStderr();
  auto restored = restore(fresh.registry);
  auto log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(restored) << "seed " << seed << ": " << describe(restored.error());
  EXPECT_EQ(log.find("corrupt"), std::string::npos) << "seed " << seed << ": " << log;
  if (!*restored) {
    ASSERT_EQ(last_step, 0) << "seed " << seed << ": a committed checkpoint disappeared";
    return;
  }
  auto step = (*restored)->step;
  ASSERT_GE(step, last_step) << "seed " << seed;
  ASSERT_TRUE(fresh.holds(step)) << "seed " << seed << ": step " << step << " is torn";
  last_step = step;
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
    // The kill point is random.
    auto committed = kill_writer_after({"crash-writer", dir.path(), std::to_string(state_bytes)},
                                       std::chrono::microseconds{delay_us(rng)});
    kills_after_a_commit += committed ? 1 : 0;
    kills_leaving_a_partial += count_partial_dirs(dir.path()) > 0 ? 1 : 0;

    auto st = store::open({dir.path(), 0, 1});
    ASSERT_TRUE(st);
    expect_whole_restore([&](state_registry& registry) { return st->restore_latest(registry); },
                         seed, last_step);
    ASSERT_FALSE(HasFatalFailure());
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

TEST(store_crash, sigkill_in_either_tiers_write_never_restores_a_torn_copy) {
  testing::temp_dir dir;
  testing::temp_dir memory_dir;
  auto seed = std::random_device{}();
  std::mt19937 rng{seed};
  std::uniform_int_distribution<int> delay_us{0, max_kill_delay_us};
  int64_t last_step = 0;
  int memory_hits = 0;
  int directory_hits = 0;
  int kills_done = 0;
  auto rank_dir = memory_dir.path() + "/rank-00000-of-00001";
  while ((memory_hits < kills_per_tier || directory_hits < kills_per_tier) &&
         kills_done < max_tiered_kills) {
    ++kills_done;
    kill_writer_after(
        {"tiered-crash-writer", dir.path(), memory_dir.path(), std::to_string(state_bytes)},
        std::chrono::microseconds{delay_us(rng)});
    // Which write the kill hit: a step begun in a tier and not committed
    // there (counted before the restore's open clears the memory tier's).
    memory_hits += count_partial_dirs(rank_dir) > 0 ? 1 : 0;
    directory_hits += count_partial_dirs(dir.path()) > 0 ? 1 : 0;

    auto st = store::open({dir.path(), 0, 1});
    ASSERT_TRUE(st);
    auto memory = memory_tier::open(memory_dir.path(), 0, 1);
    ASSERT_TRUE(memory) << describe(memory.error());
    expect_whole_restore(
        [&](state_registry& registry) {
          return restore_fastest(*st, &*memory, registry, std::nullopt);
        },
        seed, last_step);
    ASSERT_FALSE(HasFatalFailure());
  }
  std::printf(
      "%d kills: %d in a memory-tier write, %d in a directory write, last step %lld "
      "(seed %u)\n",
      kills_done, memory_hits, directory_hits, static_cast<long long>(last_step), seed);
  EXPECT_GE(memory_hits, kills_per_tier) << "seed " << seed;
  EXPECT_GE(directory_hits, kills_per_tier) << "seed " << seed;
  EXPECT_GT(last_step, 0) << "seed " << seed;
}

}  // namespace
}  // namespace lifeboat::checkpoint
