// A checkpoint directory too slow for the notice's deadline, end to end: four
// lifeboat-demo workers under lifeboat-launch with a 3 s grace period, every
// write to the checkpoint directory 400 ms slower (slow_writes_preload). The
// grace period's first save measures the directory; the final save would not
// reach it in time, so it commits in the memory and peer tiers only and the workers
// exit with the restart code; the restarted job restores from memory, writes
// that checkpoint to the directory while it trains, and ends with the digests
// of an uninterrupted run; the launcher's status names the directory among
// that checkpoint's tiers once every worker wrote it there. A checkpoint
// directory that is full takes no checkpoint at all: the save commits in
// memory as well, and the job goes on.

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/apps/status_client.hpp"
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

// The demo's arguments after --checkpoint-dir and --steps.
const std::vector<std::string> demo_args{"--state-mb", state_mb,         "--step-ms",
                                         "3",          "--grace-period", grace_period_s};
// The line each worker logs once the restarted job wrote the checkpoint
// that was in memory only to the directory.
constexpr const char* persisted_line = "persisted to the checkpoint directory";

// A job's environment: its memory tier in `dir`, each write to `ckpt`
// (created here) delayed.
std::map<std::string, std::string> slow_directory_env(const scratch_dir& dir,
                                                      const std::string& name,
                                                      const std::string& ckpt) {
  fs::create_directories(ckpt);
  return {{"LIFEBOAT_LOCAL_DIR", dir / (name + "-local")},
          {"LD_PRELOAD", lifeboat::test::built(LIFEBOAT_SLOW_WRITES)},
          {"SLOW_WRITES_DIR", fs::canonical(ckpt).string()},
          {"SLOW_WRITES_MS", write_delay_ms}};
}

tiered_job_result run(const scratch_dir& dir, const std::string& name, bool preempt) {
  auto ckpt = dir / name;
  tiered_job_options o;
  o.steps = steps;
  o.demo_args = demo_args;
  o.env = slow_directory_env(dir, name, ckpt);
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
  EXPECT_EQ(slow.count(persisted_line), tiered_job_workers) << slow.text();
}

// After the restart, the launcher's last_checkpoint is that checkpoint, first
// in memory only; once every worker wrote it to the directory in the
// background, its tiers name the directory too (each worker records it again).
TEST(deadline_save_test, the_jobs_status_names_the_directory_once_the_checkpoint_reached_it) {
  scratch_dir dir{"apps-deadline-status"};
  auto ckpt = dir / "ckpt";
  auto env = slow_directory_env(dir, "ckpt", ckpt);
  env.emplace("LIFEBOAT_PLATFORM", "generic");
  std::vector<std::string> command{lifeboat::test::built(LIFEBOAT_LAUNCH),
                                   "--nproc",
                                   std::to_string(tiered_job_workers),
                                   "--status-port",
                                   "0",
                                   "--",
                                   lifeboat::test::built(LIFEBOAT_DEMO),
                                   "--checkpoint-dir",
                                   ckpt,
                                   "--steps",
                                   std::to_string(endless_steps)};
  command.insert(command.end(), demo_args.begin(), demo_args.end());
  child_process job{command, true, environment_with(env)};
  output_log log{job};
  ASSERT_TRUE(log.read_until_count(worker_status_listening, tiered_job_workers)) << log.text();
  auto started = log.pids(0);
  ASSERT_EQ(started.count(1), 1u) << log.text();
  ::kill(started[1], SIGTERM);
  ASSERT_TRUE(log.read_until_count(persisted_line, tiered_job_workers)) << log.text();
  ASSERT_EQ(log.count("committed in memory only"), tiered_job_workers) << log.text();
  const auto& lines = log.lines();
  auto persisted = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find(persisted_line) != std::string::npos;
  });
  constexpr char step_marker[] = "checkpoint of step ";
  auto at = persisted->find(step_marker);
  ASSERT_NE(at, std::string::npos) << *persisted;
  auto step = std::stoll(persisted->substr(at + sizeof(step_marker) - 1));

  auto port = launcher_status_port(log);
  ASSERT_NE(port, 0) << log.text();
  auto names_directory = [](const lifeboat::wire::CheckpointInfo& info) {
    return std::any_of(info.tiers().begin(), info.tiers().end(),
                       [](const lifeboat::wire::TierTime& t) { return t.name() == "directory"; });
  };
  auto status = await_status(
      port,
      [&](const lifeboat::wire::Status& s) {
        return s.last_checkpoint().step() == step && names_directory(s.last_checkpoint());
      },
      std::chrono::seconds{30});
  ASSERT_TRUE(status) << log.text();
  EXPECT_EQ(status->last_checkpoint().step(), step) << log.text();
  EXPECT_TRUE(names_directory(status->last_checkpoint())) << log.text();
  job.kill(SIGTERM);
  log.read_all();
  EXPECT_EQ(exit_code(job), restart_exit_code) << log.text();
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
