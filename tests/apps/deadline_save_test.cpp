// A checkpoint directory too slow for the notice's deadline, end to end: four
// lifeboat-demo workers under lifeboat-launch with a 3 s grace period, every
// write to the checkpoint directory 400 ms slower (slow_writes_preload). The
// grace period's first save measures the directory; the final save would not
// reach it in time, so it commits in the memory and peer tiers only and the workers
// exit with the restart code; the restarted job restores from memory, writes
// that checkpoint to the directory while it trains, and ends with the digests
// of an uninterrupted run. A checkpoint directory that is full takes no
// checkpoint at all: the save commits in memory as well, and the job goes on.

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

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

// A command line that runs the rest of its arguments with a tmpfs of
// `size` mounted at `dir`, in a mount namespace of its own: a full file
// system only they see, gone with them.
std::vector<std::string> with_tmpfs_at(const std::string& dir, const std::string& size) {
  return {"/usr/bin/unshare",
          "--mount",
          "--propagation",
          "private",
          "sh",
          "-c",
          "mount -t tmpfs -o size=" + size + " lifeboat-full \"$0\" && exec \"$@\"",
          dir};
}

// Every rank's directory write fails with ENOSPC (1 MiB of tmpfs for four 2
// MiB shards): the preemption's save commits in memory on every rank and
// the workers exit with the restart code (before, the job failed: exit 3,
// counted against --max-restarts); the restart restores from memory, its
// write of that checkpoint to the directory fails on every rank at once,
// and training ends as an uninterrupted run does.
TEST(deadline_save_test, a_full_checkpoint_directory_leaves_the_checkpoint_in_memory) {
  scratch_dir dir{"apps-full-directory"};
  auto full = dir / "full";
  fs::create_directories(full);
  auto probe = with_tmpfs_at(full, "1m");
  std::string probe_command;
  for (auto& arg : probe) probe_command += "'" + arg + "' ";
  if (std::system((probe_command + "true >/dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << "cannot mount a tmpfs in a mount namespace of its own (needs root)";
  tiered_job_options o;
  o.steps = 300;
  o.demo_args = {"--state-mb", state_mb, "--step-ms", "3"};
  o.env = {{"LIFEBOAT_LOCAL_DIR", dir / "reference-local"}};
  auto reference = run_tiered_job(dir / "reference", o);
  ASSERT_EQ(reference.code, 0) << reference.text();
  ASSERT_EQ(reference.digests.size(), static_cast<size_t>(tiered_job_workers)) << reference.text();
  o.launcher_wrapper = with_tmpfs_at(full, "1m");
  o.env = {{"LIFEBOAT_LOCAL_DIR", dir / "full-local"}};
  o.preempt = true;
  auto run = run_tiered_job(full, o);
  ASSERT_EQ(run.code, 0) << run.text();
  EXPECT_EQ(run.digests, reference.digests) << run.text();
  EXPECT_EQ(run.count("restarting after failure"), 0) << run.text();
  EXPECT_EQ(run.count("workers saved a checkpoint and exited with the restart code"), 1)
      << run.text();
  EXPECT_EQ(run.count("committed in memory only: rank ", "directory write failed ("),
            tiered_job_workers)
      << run.text();
  EXPECT_EQ(run.count("from the memory tier"), tiered_job_workers) << run.text();
  EXPECT_EQ(run.count("stays in memory only"), tiered_job_workers) << run.text();
}

}  // namespace
