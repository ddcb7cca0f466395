// A checkpoint directory too slow for the notice's deadline, end to end: four
// lifeboat-demo workers under lifeboat-launch with a 3 s grace period, every
// write to the checkpoint directory 400 ms slower (slow_writes_preload). The
// grace period's first save measures the directory; the final save would not
// reach it in time, so it commits in the memory and peer tiers only and the workers
// exit with the restart code; the restarted job restores from memory, writes
// that checkpoint to the directory while it trains, and ends with the digests
// of an uninterrupted run.

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/apps/tiered_demo_job.hpp"
#include "tests/support/build_tree.hpp"

namespace {

namespace fs = std::filesystem;
using namespace lifeboat::test;

// Over 2.7 s of training (3 ms a step, and the lock-step barrier): the final
// save comes about 1.2 s before the deadline (the first save, with its 0.8 s
// directory write, leaves no time for another round), with time for the
// memory tier and the peer's copy but not for the directory. Each tier must
// end deadline_reserve_ms (1 s) before the deadline, which leaves the copy
// about 0.2 s: 2 MiB of state copy in well under that even on a loaded host
// (8 MiB took 0.2-0.5 s beside the rest of the suite), while the directory
// takes its two delayed writes whatever the size.
constexpr int64_t steps = 900;
constexpr const char* state_mb = "2";
constexpr const char* grace_period_s = "3";
constexpr const char* write_delay_ms = "400";

tiered_job_result run(const scratch_dir& dir, const std::string& name, bool preempt) {
  auto ckpt = dir / name;
  fs::create_directories(ckpt);
  tiered_job_options o;
  o.steps = steps;
  o.demo_args = {"--state-mb", state_mb, "--step-ms", "3", "--grace-period", grace_period_s};
  o.env = {{"LIFEBOAT_LOCAL_DIR", dir / (name + "-local")},
           {"LD_PRELOAD", lifeboat::test::built(LIFEBOAT_SLOW_WRITES)},
           {"SLOW_WRITES_DIR", fs::canonical(ckpt).string()},
           {"SLOW_WRITES_MS", write_delay_ms}};
  o.preempt = preempt;
  return run_tiered_job(ckpt, o);
}

TEST(deadline_save_test, a_directory_too_slow_for_the_deadline_gets_the_checkpoint_next_time) {
  scratch_dir dir{"apps-deadline-save"};
  auto reference = run(dir, "reference", false);
  ASSERT_EQ(reference.code, 0) << reference.text();
  ASSERT_EQ(reference.digests.size(), static_cast<size_t>(tiered_job_workers)) << reference.text();
  auto slow = run(dir, "slow", true);
  ASSERT_EQ(slow.code, 0) << slow.text();
  EXPECT_EQ(slow.digests, reference.digests) << slow.text();
  EXPECT_EQ(slow.count("committed in memory only"), tiered_job_workers) << slow.text();
  // That checkpoint is on a peer too: every rank's shard outlives its host.
  EXPECT_EQ(slow.count("reached tiers: memory (", "), peer (") -
                slow.count("reached tiers: memory (", "), directory ("),
            tiered_job_workers)
      << slow.text();
  EXPECT_EQ(slow.count("from the memory tier"), tiered_job_workers) << slow.text();
  EXPECT_EQ(slow.count("persisted to the checkpoint directory"), tiered_job_workers) << slow.text();
}

}  // namespace
