// Hangs and stragglers through DESIGN's contracts: lifeboat-demo's
// --hang-rank/--hang-step blocks one rank's training thread while its
// runtime stays alive; within the hang timeout (LIFEBOAT_HANG_TIMEOUT) every
// worker exits 3 naming the rank and the word "hang", the hung rank writes
// its training thread's stack, and a launcher with restarts left finishes
// the job bit-exact. --slow-rank/--slow-factor makes one rank a straggler,
// which the launcher's coordinator view flags.

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/apps/app_test_support.hpp"
#include "tests/apps/status_client.hpp"
#include "tests/support/build_tree.hpp"

namespace {

using namespace lifeboat::test;

constexpr int workers = 4;
constexpr int hung_rank = 2;
constexpr int64_t hang_step = 15;
constexpr int64_t steps = 60;
constexpr const char* hang_timeout_s = "2";
// The run ends this soon after the hang began: the timeout, heartbeats
// (4 a second), the peers' exit; generous for a loaded 2-core machine.
constexpr auto hang_exit_bound = std::chrono::seconds{12};
// A straggler's median must stand out from a window of samples first.
constexpr auto straggler_deadline = std::chrono::seconds{20};

std::vector<std::string> demo(const std::string& ckpt, std::vector<std::string> extra) {
  auto argv = demo_command(lifeboat::test::built(LIFEBOAT_DEMO), ckpt, steps, 20);
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

std::unique_ptr<child_process> launch(const std::vector<std::string>& launch_flags,
                                      const std::vector<std::string>& demo_argv) {
  std::vector<std::string> argv{lifeboat::test::built(LIFEBOAT_LAUNCH), "--nproc",
                                std::to_string(workers)};
  argv.insert(argv.end(), launch_flags.begin(), launch_flags.end());
  argv.push_back("--");
  argv.insert(argv.end(), demo_argv.begin(), demo_argv.end());
  return std::make_unique<child_process>(
      argv, true,
      environment_with(
          {{"LIFEBOAT_PLATFORM", "generic"}, {"LIFEBOAT_HANG_TIMEOUT", hang_timeout_s}}));
}

std::vector<std::string> hang_flags() {
  return {"--hang-rank", std::to_string(hung_rank), "--hang-step", std::to_string(hang_step)};
}

TEST(hang_test, every_worker_exits_3_naming_the_hung_rank_which_writes_its_stack) {
  scratch_dir dir{"apps-hang"};
  auto run = launch({"--max-restarts", "0"}, demo(dir / "ckpt", hang_flags()));
  output_log log{*run};
  // Its peers are at the hang step's barrier once the hung rank completed
  // the step before it; from then on the clock runs.
  ASSERT_TRUE(log.read_until_count(" joined (generation 0)", workers)) << log.text();
  auto hang_began = std::chrono::steady_clock::now();
  log.read_all();
  auto took = std::chrono::steady_clock::now() - hang_began;
  EXPECT_EQ(exit_code(*run), failure_exit_code) << log.text();
  EXPECT_LT(took, hang_exit_bound) << log.text();
  auto culprit = "rank " + std::to_string(hung_rank);
  auto pids = log.pids(0);
  ASSERT_EQ(pids.size(), static_cast<size_t>(workers)) << log.text();
  for (auto [rank, pid] : pids)
    EXPECT_TRUE(log.contains("lifeboat-launch: rank " + std::to_string(rank) + " (pid " +
                             std::to_string(pid) + ") exited with code 3"))
        << log.text();
  // Every peer's error line, and the exit controllers' lines, name the culprit and the hang.
  for (int rank = 0; rank < workers; ++rank) {
    if (rank == hung_rank) continue;
    EXPECT_TRUE(log.contains("lifeboat-demo: rank=" + std::to_string(rank) + " error: " + culprit +
                             ": hang: no step completed for "))
        << log.text();
  }
  EXPECT_TRUE(log.contains("lifeboat-launch: giving up: " + culprit + " failed: hang: "))
      << log.text();
  EXPECT_TRUE(log.contains("this rank is hung")) << log.text();
  EXPECT_TRUE(log.contains("lifeboat: native stack of the training thread:")) << log.text();
  // backtrace_symbols_fd writes one line per frame, naming the binary.
  EXPECT_GE(log.count("lifeboat-demo("), 2) << log.text();
  EXPECT_TRUE(log.digests(steps).empty()) << log.text();
}

TEST(hang_test, the_launcher_restarts_after_a_hang_and_the_job_finishes_bit_exact) {
  scratch_dir dir{"apps-hang-restart"};
  auto reference = launch({}, demo(dir / "reference", {}));
  output_log ref{*reference};
  ref.read_all();
  ASSERT_EQ(exit_code(*reference), 0) << ref.text();
  auto expected = ref.digests(steps);
  ASSERT_EQ(expected.size(), static_cast<size_t>(workers)) << ref.text();

  auto run = launch({"--max-restarts", "1"}, demo(dir / "ckpt", hang_flags()));
  output_log log{*run};
  log.read_all();
  EXPECT_EQ(exit_code(*run), 0) << log.text();
  EXPECT_TRUE(log.contains("restarting after failure 1 of at most 1: rank " +
                           std::to_string(hung_rank) + " failed: hang: "))
      << log.text();
  EXPECT_EQ(log.digests(steps), expected) << log.text();
}

TEST(hang_test, a_slow_rank_is_flagged_straggler_in_the_coordinators_view) {
  constexpr int slow_rank = 1;
  scratch_dir dir{"apps-straggler"};
  auto run = launch({"--status-port", "0"},
                    demo(dir / "ckpt", {"--slow-rank", std::to_string(slow_rank), "--slow-factor",
                                        "4", "--steps", std::to_string(endless_steps)}));
  output_log log{*run};
  ASSERT_TRUE(log.read_until_count(worker_status_listening, workers)) << log.text();
  uint16_t view_port = 0;
  for (const auto& l : log.lines())
    if (l.rfind("lifeboat status_endpoint: status endpoint listening on", 0) == 0)
      view_port = listening_port(l);
  ASSERT_NE(view_port, 0) << log.text();
  // Polled: the flag needs a window of samples, taken at the heartbeats' pace.
  std::optional<lifeboat::wire::Status> view;
  std::string raw;
  auto until = std::chrono::steady_clock::now() + straggler_deadline;
  for (;;) {
    view = fetch_status(view_port, &raw);
    bool flagged = view && view->workers_size() == workers && view->workers(slow_rank).straggler();
    if (flagged || std::chrono::steady_clock::now() > until) break;
    log.read_for(status_poll_pace * 25);
  }
  ASSERT_TRUE(view) << raw;
  ASSERT_EQ(view->workers_size(), workers) << raw;
  for (const auto& worker : view->workers()) {
    EXPECT_EQ(worker.straggler(), worker.rank() == slow_rank) << raw;
    EXPECT_GT(worker.step_seconds_median(), 0) << raw;
  }
  EXPECT_GT(view->workers(slow_rank).step_seconds_median(),
            2 * view->workers(0).step_seconds_median())
      << raw;
  auto metrics = http_get(view_port, "/metrics").body;
  EXPECT_NE(metrics.find("lifeboat_worker_straggler{rank=\"" + std::to_string(slow_rank) + "\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("lifeboat_worker_step_seconds{"), std::string::npos) << metrics;
  // The service logs a new straggler at its next comparison (once a second).
  EXPECT_TRUE(
      log.contains("rank " + std::to_string(slow_rank) + " is a straggler") ||
      log.read_until("rank " + std::to_string(slow_rank) + " is a straggler", straggler_deadline))
      << log.text();
  EXPECT_EQ(log.count("is a straggler"), 1) << log.text();
  run->kill(SIGTERM);
  log.read_all();
}

}  // namespace
