// The memory and peer tiers end to end: four lifeboat-demo workers under
// lifeboat-launch get a SIGTERM, save (memory, a peer's replica, directory),
// and the launcher restarts them; every rank restores from its memory tier
// (LIFEBOAT_LOCAL_DIR) and the final digests equal an uninterrupted run's.
// With rank 2's memory tier wiped before the restart (a replaced host), rank
// 2 restores the same step from the replica rank 3 keeps, bit-exact; with
// that replica corrupt too, from the checkpoint directory, and says corrupt.

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
// The same, and 16 bytes of the replica's data overwritten (rank 3 keeps
// rank 2's replicas on one host).
const char* const wipe_and_corrupt_script =
    "if [ \"$LIFEBOAT_RESTART_COUNT\" = 1 ] && [ \"$LIFEBOAT_RANK\" = 2 ]; then "
    "rm -rf \"$LIFEBOAT_LOCAL_DIR/rank-00002-of-00004\"; "
    "for f in \"$LIFEBOAT_LOCAL_DIR\"/peer/rank-00002-of-00004/step-*/*.data; do "
    "printf lifeboat-corrupt | dd of=\"$f\" bs=1 seek=4096 conv=notrunc 2>/dev/null; done; "
    "fi; exec \"$@\"";

enum class before_restart { nothing, wipe, wipe_and_corrupt };

tiered_job_result run(const scratch_dir& dir, const std::string& name, bool preempt,
                      before_restart what = before_restart::nothing) {
  tiered_job_options o;
  o.steps = steps;
  if (what == before_restart::wipe) o.wrapper = {"/bin/sh", "-c", wipe_script, "sh"};
  if (what == before_restart::wipe_and_corrupt)
    o.wrapper = {"/bin/sh", "-c", wipe_and_corrupt_script, "sh"};
  o.demo_args = {"--state-mb", "4", "--step-ms", "5"};
  o.env = {{"LIFEBOAT_LOCAL_DIR", dir / (name + "-local")}};
  o.preempt = preempt;
  return run_tiered_job(dir / name, o);
}

// The digests of an uninterrupted run, once for every test here. Its
// directory goes at once: a static scratch_dir would end among the static
// destructors, and its cleanup reads files through posix_file_system(),
// whose instance, made later, is gone by then.
const tiered_job_result& reference() {
  static tiered_job_result result = [] {
    scratch_dir dir{"apps-memory-tier-reference"};
    return run(dir, "reference", false);
  }();
  return result;
}

TEST(memory_restore_test, every_rank_restores_from_its_memory_tier) {
  ASSERT_EQ(reference().code, 0) << reference().text();
  ASSERT_EQ(reference().digests.size(), static_cast<size_t>(tiered_job_workers))
      << reference().text();
  scratch_dir dir{"apps-memory-tier"};
  auto preempted = run(dir, "preempted", true);
  ASSERT_EQ(preempted.code, 0) << preempted.text();
  EXPECT_EQ(preempted.digests, reference().digests) << preempted.text();
  EXPECT_EQ(preempted.count(from_memory), tiered_job_workers) << preempted.text();
  // Every rank's preemption checkpoint reached all three tiers.
  EXPECT_EQ(preempted.count("reached tiers: memory (", "), peer ("), tiered_job_workers)
      << preempted.text();
  // A clean end removes every rank's tier and every replica.
  EXPECT_FALSE(fs::exists(dir / "preempted-local")) << preempted.text();
}

TEST(memory_restore_test, a_wiped_memory_tier_restores_from_the_peer) {
  ASSERT_EQ(reference().code, 0) << reference().text();
  scratch_dir dir{"apps-memory-tier-wiped"};
  auto wiped = run(dir, "wiped", true, before_restart::wipe);
  ASSERT_EQ(wiped.code, 0) << wiped.text();
  EXPECT_EQ(wiped.digests, reference().digests) << wiped.text();
  EXPECT_EQ(wiped.count(from_memory), tiered_job_workers - 1) << wiped.text();
  EXPECT_EQ(wiped.count("[rank 2] checkpoint: restored step ", "from the peer tier"), 1)
      << wiped.text();
}

TEST(memory_restore_test, a_wiped_memory_tier_and_a_corrupt_replica_restore_from_the_directory) {
  ASSERT_EQ(reference().code, 0) << reference().text();
  scratch_dir dir{"apps-memory-tier-corrupt"};
  auto corrupt = run(dir, "corrupt", true, before_restart::wipe_and_corrupt);
  ASSERT_EQ(corrupt.code, 0) << corrupt.text();
  EXPECT_EQ(corrupt.digests, reference().digests) << corrupt.text();
  EXPECT_EQ(corrupt.count(from_memory), tiered_job_workers - 1) << corrupt.text();
  // The copy fetched from the peer failed its checksum, naming its file.
  EXPECT_EQ(corrupt.count("[rank 2] checkpoint: warning: peer tier: step ", "corrupt file "), 1)
      << corrupt.text();
  // Rank 2's restore line names the checkpoint directory's step.
  EXPECT_EQ(corrupt.count("[rank 2] checkpoint: restored step ", dir / "corrupt"), 1)
      << corrupt.text();
}

}  // namespace
