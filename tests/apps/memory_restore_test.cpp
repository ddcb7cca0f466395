// The memory tier end to end: four lifeboat-demo workers under
// lifeboat-launch get a SIGTERM, save, and the launcher restarts them; every
// rank restores from its memory tier (LIFEBOAT_LOCAL_DIR) and the final
// digests equal an uninterrupted run's. With rank 2's memory tier wiped
// before the restart (a replaced host), rank 2 restores the same step from
// the checkpoint directory, bit-exact, and the others still from memory.

#include <algorithm>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/apps/tiered_demo_job.hpp"

namespace {

namespace fs = std::filesystem;
using namespace lifeboat::test;

// 1.5 s of training: the notice comes well before the last step.
constexpr int64_t steps = 300;
constexpr const char* from_memory = "from the memory tier";

// Runs the demo after wiping rank 2's memory tier in the first restart: a
// shell in front of the demo's command line (the launcher's wrapper slot).
const char* const wipe_script =
    "if [ \"$LIFEBOAT_RESTART_COUNT\" = 1 ] && [ \"$LIFEBOAT_RANK\" = 2 ]; then "
    "rm -rf \"$LIFEBOAT_LOCAL_DIR/rank-00002-of-00004\"; fi; exec \"$@\"";

tiered_job_result run(const scratch_dir& dir, const std::string& name, bool preempt, bool wipe) {
  tiered_job_options o;
  o.steps = steps;
  if (wipe) o.wrapper = {"/bin/sh", "-c", wipe_script, "sh"};
  o.demo_args = {"--state-mb", "4", "--step-ms", "5"};
  o.env = {{"LIFEBOAT_LOCAL_DIR", dir / (name + "-local")}};
  o.preempt = preempt;
  return run_tiered_job(dir / name, o);
}

TEST(memory_restore_test, every_rank_restores_from_its_memory_tier) {
  scratch_dir dir{"apps-memory-tier"};
  auto reference = run(dir, "reference", false, false);
  ASSERT_EQ(reference.code, 0) << reference.text();
  ASSERT_EQ(reference.digests.size(), static_cast<size_t>(tiered_job_workers)) << reference.text();
  auto preempted = run(dir, "preempted", true, false);
  ASSERT_EQ(preempted.code, 0) << preempted.text();
  EXPECT_EQ(preempted.digests, reference.digests) << preempted.text();
  EXPECT_EQ(preempted.count(from_memory), tiered_job_workers) << preempted.text();
  // A clean end removes every rank's tier.
  EXPECT_FALSE(fs::exists(dir / "preempted-local")) << preempted.text();
}

TEST(memory_restore_test, a_wiped_memory_tier_restores_from_the_directory) {
  scratch_dir dir{"apps-memory-tier-wiped"};
  auto reference = run(dir, "reference", false, false);
  ASSERT_EQ(reference.code, 0) << reference.text();
  auto wiped = run(dir, "wiped", true, true);
  ASSERT_EQ(wiped.code, 0) << wiped.text();
  EXPECT_EQ(wiped.digests, reference.digests) << wiped.text();
  EXPECT_EQ(wiped.count(from_memory), tiered_job_workers - 1) << wiped.text();
  // Rank 2's restore line names the checkpoint directory's step.
  auto ckpt = dir / "wiped";
  auto rank_2_from_directory =
      std::count_if(wiped.lines.begin(), wiped.lines.end(), [&](const std::string& line) {
        return line.find("[rank 2] checkpoint: restored step ") != std::string::npos &&
               line.find(ckpt) != std::string::npos;
      });
  EXPECT_EQ(rank_2_from_directory, 1) << wiped.text();
}

}  // namespace
