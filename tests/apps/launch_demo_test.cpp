// lifeboat-launch running lifeboat-demo, as DESIGN.md's contracts describe
// them: a SIGTERM to a random worker at a random time never changes the final
// digests; a SIGTERM to the launcher saves and exits with the restart code; a
// failing worker makes every worker exit 3 and, past --max-restarts, the
// launcher exit non-zero naming it; no worker outlives its launcher.

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/child_process.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using lifeboat::test::child_process;

constexpr int workers = 4;
constexpr int restart_code = 42;
constexpr int failure_code = 3;
constexpr int preemption_rounds = 10;
constexpr auto run_deadline = 120s;
constexpr auto line_deadline = 60s;
// The SIGTERM lands at a random moment this far after every worker joined.
constexpr int max_sigterm_delay_ms = 600;
const std::vector<std::string> demo_args{"--steps", "150", "--state-mb", "1", "--step-ms", "5"};

class launch_demo_test : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lifeboat-apps-test-" + std::to_string(::getpid()) + "-" + std::to_string(runs_++));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<child_process> launch(const std::string& ckpt,
                                        std::vector<std::string> extra_launch = {},
                                        std::vector<std::string> extra_demo = {}) {
    std::vector<std::string> argv{LIFEBOAT_LAUNCH, "--nproc", std::to_string(workers)};
    argv.insert(argv.end(), extra_launch.begin(), extra_launch.end());
    argv.insert(argv.end(), {"--", LIFEBOAT_DEMO, "--checkpoint-dir", (dir_ / ckpt).string()});
    argv.insert(argv.end(), demo_args.begin(), demo_args.end());
    argv.insert(argv.end(), extra_demo.begin(), extra_demo.end());
    return std::make_unique<child_process>(argv, true);
  }

  // Reads until every worker joined the service: by then each has its signal
  // handlers in place (they go in before the join).
  std::vector<std::string> read_until_all_joined(child_process& p) {
    std::vector<std::string> lines;
    int joined = 0;
    while (joined < workers) {
      auto line = p.read_line(line_deadline);
      if (!line) break;
      lines.push_back(*line);
      if (line->find(" joined (generation") != std::string::npos) ++joined;
    }
    return lines;
  }

  static std::vector<std::string> read_all(child_process& p, std::vector<std::string> lines) {
    while (auto line = p.read_line(line_deadline)) lines.push_back(*line);
    return lines;
  }

  // GCC 12 warns inside std::regex when built with the sanitizers; the
  // contract lines are simple enough for sscanf.
  static std::map<int, std::string> digests(const std::vector<std::string>& lines) {
    std::map<int, std::string> out;
    for (const auto& l : lines) {
      int rank = 0;
      char digest[65] = {};
      auto at = l.find("lifeboat-demo: rank=");
      if (at != std::string::npos &&
          std::sscanf(l.c_str() + at, "lifeboat-demo: rank=%d step=150 digest=%64[0-9a-f]", &rank,
                      digest) == 2)
        out[rank] = digest;
    }
    return out;
  }

  static std::map<int, pid_t> pids(const std::vector<std::string>& lines, int restart) {
    std::map<int, pid_t> out;
    for (const auto& l : lines) {
      int rank = 0;
      int pid = 0;
      int generation = 0;
      if (std::sscanf(l.c_str(), "lifeboat-launch: rank=%d pid=%d restart=%d", &rank, &pid,
                      &generation) == 3 &&
          generation == restart)
        out[rank] = static_cast<pid_t>(pid);
    }
    return out;
  }

  static bool gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

  static int exit_code(child_process& p) {
    auto status = p.wait_exit(run_deadline);
    if (!status || !WIFEXITED(*status)) return -1;
    return WEXITSTATUS(*status);
  }

  static std::string joined(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  }

  fs::path dir_;
  static inline int runs_ = 0;
};

TEST_F(launch_demo_test, sigterm_to_a_random_worker_never_changes_the_digests) {
  auto reference = launch("reference");
  auto ref_lines = read_all(*reference, {});
  ASSERT_EQ(exit_code(*reference), 0) << joined(ref_lines);
  auto expected = digests(ref_lines);
  ASSERT_EQ(expected.size(), static_cast<size_t>(workers)) << joined(ref_lines);

  std::mt19937 rng{std::random_device{}()};
  for (int round = 0; round < preemption_rounds; ++round) {
    fs::remove_all(dir_ / "preempted");
    auto run = launch("preempted");
    auto lines = read_until_all_joined(*run);
    auto started = pids(lines, 0);
    ASSERT_EQ(started.size(), static_cast<size_t>(workers)) << joined(lines);
    // A random moment: whatever the launcher says meanwhile is kept.
    auto delay = std::chrono::milliseconds{rng() % max_sigterm_delay_ms};
    auto until = std::chrono::steady_clock::now() + delay;
    while (std::chrono::steady_clock::now() < until)
      if (auto line = run->read_line(std::chrono::duration_cast<std::chrono::milliseconds>(
              until - std::chrono::steady_clock::now())))
        lines.push_back(*line);
    int victim = static_cast<int>(rng() % workers);
    ::kill(started[victim], SIGTERM);
    lines = read_all(*run, lines);
    ASSERT_EQ(exit_code(*run), 0) << "round " << round << "\n" << joined(lines);
    EXPECT_EQ(digests(lines), expected) << "round " << round << "\n" << joined(lines);
  }
}

TEST_F(launch_demo_test, sigterm_to_the_launcher_saves_and_exits_with_the_restart_code) {
  auto run = launch("launcher");
  auto lines = read_until_all_joined(*run);
  auto started = pids(lines, 0);
  ASSERT_EQ(started.size(), static_cast<size_t>(workers)) << joined(lines);
  run->kill(SIGTERM);
  lines = read_all(*run, lines);
  EXPECT_EQ(exit_code(*run), restart_code) << joined(lines);
  auto text = joined(lines);
  EXPECT_NE(text.find("committed; exiting with restart code 42"), std::string::npos) << text;
  bool has_checkpoint = false;
  for (const auto& entry : fs::directory_iterator(dir_ / "launcher"))
    has_checkpoint = has_checkpoint || entry.path().filename().string().rfind("step-", 0) == 0;
  EXPECT_TRUE(has_checkpoint);
  for (auto [rank, pid] : started) EXPECT_TRUE(gone(pid)) << "rank " << rank << " outlived it";
}

TEST_F(launch_demo_test, a_failing_worker_fails_everyone_and_counts_against_max_restarts) {
  auto run = launch("failing", {"--max-restarts", "1"}, {"--fail-rank", "2", "--fail-step", "5"});
  auto lines = read_all(*run, {});
  EXPECT_NE(exit_code(*run), 0) << joined(lines);
  auto text = joined(lines);
  // Every worker raised the error of rank 2, in both generations.
  for (int rank = 0; rank < workers; ++rank)
    EXPECT_NE(text.find("rank " + std::to_string(rank) + " (pid"), std::string::npos) << text;
  EXPECT_EQ(pids(lines, 1).size(), static_cast<size_t>(workers)) << text;
  EXPECT_TRUE(pids(lines, 2).empty()) << text;
  EXPECT_NE(text.find("exited with code " + std::to_string(failure_code)), std::string::npos)
      << text;
  EXPECT_NE(text.find("injected failure at step 5"), std::string::npos) << text;
  EXPECT_NE(text.find("giving up"), std::string::npos) << text;
}

TEST_F(launch_demo_test, sigkill_of_a_worker_leaves_no_orphan) {
  auto run = launch("killed", {"--max-restarts", "0"});
  auto lines = read_until_all_joined(*run);
  auto started = pids(lines, 0);
  ASSERT_EQ(started.size(), static_cast<size_t>(workers)) << joined(lines);
  ::kill(started[1], SIGKILL);
  lines = read_all(*run, lines);
  EXPECT_NE(exit_code(*run), 0) << joined(lines);
  EXPECT_NE(joined(lines).find("rank 1"), std::string::npos) << joined(lines);
  for (auto [rank, pid] : started) EXPECT_TRUE(gone(pid)) << "rank " << rank << " outlived it";
}

}  // namespace
