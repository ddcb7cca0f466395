// The memory tier end to end: four lifeboat-demo workers under
// lifeboat-launch get a SIGTERM, save, and the launcher restarts them; every
// rank restores from its memory tier (LIFEBOAT_LOCAL_DIR) and the final
// digests equal an uninterrupted run's. With rank 2's memory tier wiped
// before the restart (a replaced host), rank 2 restores the same step from
// the checkpoint directory, bit-exact, and the others still from memory.

#include <signal.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/apps/app_test_support.hpp"

namespace {

namespace fs = std::filesystem;
using namespace lifeboat::test;

constexpr int workers = 4;
// 1.5 s of training: the notice comes well before the last step.
constexpr int64_t steps = 300;
constexpr const char* from_memory = "from the memory tier";

// Runs the demo after wiping rank 2's memory tier in the first restart: a
// shell in front of the demo's command line (the launcher's wrapper slot).
const char* const wipe_script =
    "if [ \"$LIFEBOAT_RESTART_COUNT\" = 1 ] && [ \"$LIFEBOAT_RANK\" = 2 ]; then "
    "rm -rf \"$LIFEBOAT_LOCAL_DIR/rank-00002-of-00004\"; fi; exec \"$@\"";

std::unique_ptr<child_process> launch(const fs::path& ckpt, const fs::path& local, bool wipe) {
  std::vector<std::string> argv{LIFEBOAT_LAUNCH,
                                "--nproc",
                                std::to_string(workers),
                                "--max-restarts",
                                "1",
                                "--status-port",
                                "0",
                                "--"};
  if (wipe) argv.insert(argv.end(), {"/bin/sh", "-c", wipe_script, "sh"});
  argv.insert(argv.end(), {LIFEBOAT_DEMO, "--checkpoint-dir", ckpt.string(), "--steps",
                           std::to_string(steps), "--state-mb", "4", "--step-ms", "5"});
  return std::make_unique<child_process>(
      argv, true,
      environment_with({{"LIFEBOAT_PLATFORM", "generic"}, {"LIFEBOAT_LOCAL_DIR", local.string()}}));
}

// What a run under the launcher printed and how it ended.
struct run_result {
  int code = -1;
  std::map<int, std::string> digests;
  std::string text;
  int restored_from_memory = 0;
  // Lines where rank 2 says it restored from the checkpoint directory.
  int rank_2_from_directory = 0;
};

// A run of the demo; with `preempt`, rank 1 gets a SIGTERM once every worker
// trains, and the launcher restarts the job once.
run_result run(const fs::path& ckpt, const fs::path& local, bool preempt, bool wipe) {
  auto job = launch(ckpt, local, wipe);
  output_log log{*job};
  run_result out;
  if (preempt) {
    // Past the handler's construction: a notice now is saved, not met by
    // the start-up guard (which exits without a checkpoint).
    if (!log.read_until_count(worker_status_listening, workers)) {
      out.text = log.text();
      return out;
    }
    auto started = log.pids(0);
    if (started.count(1) != 0) ::kill(started[1], SIGTERM);
  }
  log.read_all();
  out.code = exit_code(*job);
  out.digests = log.digests(steps);
  out.text = log.text();
  out.restored_from_memory = log.count(from_memory);
  out.rank_2_from_directory = log.count_if([](const std::string& line) {
    return line.find("[rank 2] checkpoint: restored step ") != std::string::npos &&
           line.find(from_memory) == std::string::npos;
  });
  return out;
}

TEST(memory_restore_test, every_rank_restores_from_its_memory_tier) {
  scratch_dir dir{"apps-memory-tier"};
  auto reference = run(dir / "reference", dir / "reference-local", false, false);
  ASSERT_EQ(reference.code, 0) << reference.text;
  ASSERT_EQ(reference.digests.size(), static_cast<size_t>(workers)) << reference.text;
  auto preempted = run(dir / "preempted", dir / "preempted-local", true, false);
  ASSERT_EQ(preempted.code, 0) << preempted.text;
  EXPECT_EQ(preempted.digests, reference.digests) << preempted.text;
  EXPECT_EQ(preempted.restored_from_memory, workers) << preempted.text;
  // A clean end removes every rank's tier.
  EXPECT_FALSE(fs::exists(dir / "preempted-local")) << preempted.text;
}

TEST(memory_restore_test, a_wiped_memory_tier_restores_from_the_directory) {
  scratch_dir dir{"apps-memory-tier-wiped"};
  auto reference = run(dir / "reference", dir / "reference-local", false, false);
  ASSERT_EQ(reference.code, 0) << reference.text;
  auto wiped = run(dir / "wiped", dir / "wiped-local", true, true);
  ASSERT_EQ(wiped.code, 0) << wiped.text;
  EXPECT_EQ(wiped.digests, reference.digests) << wiped.text;
  EXPECT_EQ(wiped.restored_from_memory, workers - 1) << wiped.text;
  EXPECT_EQ(wiped.rank_2_from_directory, 1) << wiped.text;
}

}  // namespace
