// lifeboat-launch running lifeboat-demo, as DESIGN.md's contracts describe
// them: a SIGTERM to a random worker at a random time never changes the final
// digests; a SIGTERM to the launcher saves and exits with the restart code, a
// SIGINT ends the job without a restart; with a grace period a notice saves
// twice; a failing or killed worker counts against --max-restarts and, past
// it, the launcher exits non-zero naming it; a worker that ends before it
// joins fails its peers at once; no worker outlives its launcher.

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "checkpoint/layout.hpp"
#include "tests/apps/app_test_support.hpp"
#include "tests/support/build_tree.hpp"
#include "tests/support/loopback_port.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace lifeboat::test;

constexpr int workers = 4;
constexpr int preemption_rounds = 10;
// Short runs keep ten preemptions well inside the time budget of tests/apps:
// 150 steps of 5 ms is under a second of training per generation.
constexpr int64_t steps = 150;
// Runs that end only when a test stops them.
constexpr int64_t endless_steps = 1'000'000;
// The SIGTERM lands at a random moment up to this long after every worker
// joined: from before the first step to after the last.
constexpr int max_sigterm_delay_ms = 1000;

// A cloud runner would otherwise be detected (with its grace period and
// notice sources); these tests are about the launcher, not about platform detection.
const std::map<std::string, std::string> hermetic_env{{"LIFEBOAT_PLATFORM", "generic"}};

// lifeboat-launch running lifeboat-demo; `wrapper`, when given, runs before
// the demo and ends with the demo's command line as its arguments.
std::unique_ptr<child_process> launch(const std::string& ckpt,
                                      const std::vector<std::string>& extra_launch = {},
                                      const std::vector<std::string>& extra_demo = {},
                                      int64_t run_steps = steps,
                                      const std::vector<std::string>& wrapper = {}) {
  std::vector<std::string> argv{lifeboat::test::built(LIFEBOAT_LAUNCH), "--nproc",
                                std::to_string(workers)};
  argv.insert(argv.end(), extra_launch.begin(), extra_launch.end());
  argv.push_back("--");
  argv.insert(argv.end(), wrapper.begin(), wrapper.end());
  auto demo = demo_command(lifeboat::test::built(LIFEBOAT_DEMO), ckpt, run_steps, 5);
  argv.insert(argv.end(), demo.begin(), demo.end());
  argv.insert(argv.end(), extra_demo.begin(), extra_demo.end());
  return std::make_unique<child_process>(argv, true, environment_with(hermetic_env));
}

// The pids of every worker of `generation`, by rank, once all joined the
// service; fewer (the caller's failure) when not all joined in time. A worker
// that joined has its signal handlers in place (they go in before the join),
// so a SIGTERM is a notice to it, not death.
std::map<int, pid_t> joined_workers(output_log& log, int generation) {
  if (!log.read_until_count(" joined (generation " + std::to_string(generation) + ")", workers))
    return {};
  return log.pids(generation);
}

// Every worker in `started` is gone within orphan_deadline: none outlived the launcher.
testing::AssertionResult none_outlived(const std::map<int, pid_t>& started) {
  for (auto [rank, pid] : started)
    if (!gone_within(pid, orphan_deadline))
      return testing::AssertionFailure()
             << "rank " << rank << " (pid " << pid << ") outlived the launcher";
  return testing::AssertionSuccess();
}

bool has_committed_checkpoint(const fs::path& dir) {
  if (!fs::exists(dir)) return false;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().rfind("step-", 0) == 0) return true;
  return false;
}

// Each rank's digest after an uninterrupted run in `ckpt`; a run that fails
// fails the test and leaves fewer.
std::map<int, std::string> reference_digests(const fs::path& ckpt) {
  auto reference = launch(ckpt);
  output_log ref{*reference};
  ref.read_all();
  EXPECT_EQ(exit_code(*reference), 0) << ref.text();
  return ref.digests(steps);
}

// A job with `flags` in `ckpt` whose rank `victim` takes a SIGTERM once every
// worker joined: it saves, restarts and ends 0 with `expected` (the digests
// of a run without the flags), every worker having agreed on one step when
// the notice came in time to save. `check` then reads the whole output.
void expect_a_notice_keeps_the_digests(const fs::path& ckpt, const std::vector<std::string>& flags,
                                       int victim, const std::map<int, std::string>& expected,
                                       const std::function<void(output_log&)>& check) {
  auto run = launch(ckpt, flags);
  output_log log{*run};
  auto started = joined_workers(log, 0);
  ASSERT_EQ(started.size(), static_cast<size_t>(workers)) << log.text();
  ::kill(started[victim], SIGTERM);
  log.read_all();
  ASSERT_EQ(exit_code(*run), 0) << log.text();
  EXPECT_EQ(log.digests(steps), expected) << log.text();
  auto agreed = log.agreed_steps();
  if (!agreed.empty()) {
    EXPECT_EQ(agreed.size(), static_cast<size_t>(workers)) << log.text();
    EXPECT_EQ(std::set<long long>(agreed.begin(), agreed.end()).size(), 1u) << log.text();
  }
  check(log);
}

TEST(launch_demo_test, sigterm_to_a_random_worker_never_changes_the_digests) {
  scratch_dir dir{"apps-preempt"};
  auto expected = reference_digests(dir / "reference");
  ASSERT_EQ(expected.size(), static_cast<size_t>(workers));

  std::mt19937 rng{std::random_device{}()};
  int restarted_rounds = 0;
  for (int round = 0; round < preemption_rounds; ++round) {
    auto ckpt = dir / ("preempted-" + std::to_string(round));
    auto run = launch(ckpt);
    output_log log{*run};
    auto started = joined_workers(log, 0);
    ASSERT_EQ(started.size(), static_cast<size_t>(workers)) << log.text();
    auto delay = std::chrono::milliseconds{rng() % max_sigterm_delay_ms};
    log.read_for(delay);
    int victim = static_cast<int>(rng() % workers);
    ::kill(started[victim], SIGTERM);
    log.read_all();
    auto where = "round " + std::to_string(round) + ": SIGTERM to rank " + std::to_string(victim) +
                 " after " + std::to_string(delay.count()) + " ms\n";
    ASSERT_EQ(exit_code(*run), 0) << where << log.text();
    EXPECT_EQ(log.digests(steps), expected) << where << log.text();
    // A SIGTERM after the last step may come too late to save anything; one
    // that was honoured made every worker save at one step and restart.
    auto agreed = log.agreed_steps();
    if (!agreed.empty()) {
      EXPECT_EQ(agreed.size(), static_cast<size_t>(workers)) << where << log.text();
      EXPECT_EQ(std::set<long long>(agreed.begin(), agreed.end()).size(), 1u)
          << where << log.text();
      EXPECT_EQ(log.pids(1).size(), static_cast<size_t>(workers)) << where << log.text();
      ++restarted_rounds;
    }
  }
  // Most SIGTERMs land during training (it takes most of the delay range);
  // all ten landing after the last step is a one-in-a-million event.
  EXPECT_GT(restarted_rounds, 0);
  RecordProperty("restarted_rounds", restarted_rounds);
}

// The same job started twice on one host (one checkpoint directory): the
// second start stops before it joins or touches a file, and the first goes
// on, saves at a notice and restores from its memory tier (which the second
// would have cleared of the save in progress), ending with the digests of an
// uninterrupted run.
TEST(launch_demo_test, the_same_job_started_twice_stops_the_second_and_spares_the_first) {
  // Long enough that the first is still training when the second fails.
  constexpr int64_t long_steps = 1000;
  scratch_dir dir{"apps-twice"};
  auto reference = launch(dir / "reference", {}, {}, long_steps);
  output_log ref{*reference};
  ref.read_all();
  ASSERT_EQ(exit_code(*reference), 0) << ref.text();
  auto expected = ref.digests(long_steps);
  ASSERT_EQ(expected.size(), static_cast<size_t>(workers)) << ref.text();

  auto port = [] { return std::to_string(unused_port()); };
  auto first = launch(dir / "ckpt", {"--port", port()}, {}, long_steps);
  output_log log{*first};
  auto started = joined_workers(log, 0);
  ASSERT_EQ(started.size(), static_cast<size_t>(workers)) << log.text();
  auto second = launch(dir / "ckpt", {"--port", port()}, {}, long_steps);
  output_log again{*second};
  again.read_all();
  EXPECT_NE(exit_code(*second), 0) << again.text();
  EXPECT_GE(again.count("is in use by another process: the same job (the same checkpoint "
                        "directory) started twice on this host"),
            1)
      << again.text();
  EXPECT_EQ(again.count(" joined (generation "), 0) << again.text();

  ::kill(started[1], SIGTERM);
  log.read_all();
  ASSERT_EQ(exit_code(*first), 0) << log.text();
  EXPECT_EQ(log.digests(long_steps), expected) << log.text();
  EXPECT_EQ(log.count_if([](const std::string& l) {
    return l.find("checkpoint: restored step ") != std::string::npos &&
           l.find(" from the memory tier ") != std::string::npos;
  }),
            workers)
      << log.text();
}

// --tls: the job's coordination connections run TLS 1.3 (the service says
// so, and the workers, told LIFEBOAT_TLS=1, join through it); a notice still
// saves at one agreed step and the restarted job ends with the digests of a
// run without TLS.
TEST(launch_demo_test, with_tls_a_notice_saves_and_the_digests_stay_the_same) {
  scratch_dir dir{"apps-tls"};
  auto expected = reference_digests(dir / "reference");
  ASSERT_EQ(expected.size(), static_cast<size_t>(workers));
  expect_a_notice_keeps_the_digests(dir / "tls", {"--tls"}, 1, expected, [](output_log& log) {
    EXPECT_GE(log.count("TLS 1.3 on every connection"), 1) << log.text();
  });
}

// --coordinator [::1]:PORT: the service listens on IPv6, the workers join it
// and reach each other's peer tier there, and a notice saves and restarts
// with the digests of a run on 127.0.0.1.
TEST(launch_demo_test, over_ipv6_a_notice_saves_and_the_digests_stay_the_same) {
  auto port = unused_port(AF_INET6);
  if (port == 0) GTEST_SKIP() << "no IPv6 loopback (::1) here";
  scratch_dir dir{"apps-ipv6"};
  auto expected = reference_digests(dir / "reference");
  ASSERT_EQ(expected.size(), static_cast<size_t>(workers));
  expect_a_notice_keeps_the_digests(
      dir / "ipv6", {"--coordinator", "[::1]:" + std::to_string(port)}, 2, expected,
      [](output_log& log) {
        // Every rank's peer tier in every generation, each at an IPv6 address.
        auto generations = log.pids(1).empty() ? 1 : 2;
        auto replicas = log.count("keeps this rank's replicas");
        EXPECT_EQ(replicas, generations * workers) << log.text();
        EXPECT_EQ(log.count_if([](const std::string& line) {
          return line.find("keeps this rank's replicas") != std::string::npos &&
                 line.find(" at [::1]:") != std::string::npos;
        }),
                  replicas)
            << log.text();
      });
}

TEST(launch_demo_test, sigterm_to_the_launcher_saves_and_exits_with_the_restart_code) {
  scratch_dir dir{"apps-launcher"};
  auto run = launch(dir / "ckpt");
  output_log log{*run};
  auto started = joined_workers(log, 0);
  ASSERT_EQ(started.size(), static_cast<size_t>(workers)) << log.text();
  run->kill(SIGTERM);
  log.read_all();
  EXPECT_EQ(exit_code(*run), restart_exit_code) << log.text();
  EXPECT_EQ(log.count("committed; exiting with restart code 42"), workers) << log.text();
  EXPECT_TRUE(has_committed_checkpoint(dir.path() / "ckpt")) << log.text();
  // The launcher forwarded the signal and did not start another generation.
  EXPECT_TRUE(log.pids(1).empty()) << log.text();
  EXPECT_TRUE(none_outlived(started));
}

// A job whose output nobody reads any more (`| tee log`, tee gone: here a
// grep that quits once every worker joined) still saves at a SIGTERM and exits
// with the restart code: the launcher and the workers drop their lines
// instead of dying of SIGPIPE, which took every worker and the steps since
// the last checkpoint with them.
TEST(launch_demo_test, a_job_whose_output_nobody_reads_still_saves_at_a_sigterm) {
  scratch_dir dir{"apps-unread"};
  std::vector<std::string> argv{
      "/bin/bash",
      "-c",
      "exec \"$@\" > >(grep --line-buffered -m 4 ' joined (generation 0)') 2>&1",
      "bash",
      lifeboat::test::built(LIFEBOAT_LAUNCH),
      "--nproc",
      std::to_string(workers),
      "--"};
  auto demo = endless_demo_command(lifeboat::test::built(LIFEBOAT_DEMO), dir / "ckpt");
  argv.insert(argv.end(), demo.begin(), demo.end());
  child_process run{argv, true, environment_with(hermetic_env)};
  output_log log{run};
  // The reader is gone once its lines came: every line from now on meets a
  // pipe nobody reads.
  log.read_all();
  ASSERT_TRUE(run.at_eof()) << log.text();
  ASSERT_EQ(log.count(" joined (generation 0)"), workers) << log.text();
  run.kill(SIGTERM);
  EXPECT_EQ(exit_code(run), restart_exit_code);
  EXPECT_TRUE(has_committed_checkpoint(dir.path() / "ckpt"));
}

// lifeboat-demo --grace-period: a SIGTERM early in training saves at once,
// training goes on, and a final checkpoint is saved before the deadline; the
// restart resumes from the final one and the digests are those of a run
// without a notice.
// The same without memory tiers (LIFEBOAT_LOCAL_DIR=off), where no tier's
// lock sees the other job: the second job's rank 0 finds the checkpoint
// directory locked by the first's and stops before it joins; the first
// finishes.
TEST(launch_demo_test, a_second_job_without_memory_tiers_is_refused_by_rank_0s_lock) {
  constexpr int64_t long_steps = 600;
  scratch_dir dir{"apps-twice-off"};
  const std::vector<std::string> off{"/usr/bin/env", "LIFEBOAT_LOCAL_DIR=off"};
  auto port = [] { return std::to_string(unused_port()); };
  auto first = launch(dir / "ckpt", {"--port", port()}, {}, long_steps, off);
  output_log log{*first};
  ASSERT_EQ(joined_workers(log, 0).size(), static_cast<size_t>(workers)) << log.text();
  auto second = launch(dir / "ckpt", {"--port", port()}, {}, long_steps, off);
  output_log again{*second};
  again.read_all();
  EXPECT_NE(exit_code(*second), 0) << again.text();
  EXPECT_EQ(again.count("lifeboat-demo: configuration error: checkpoint_dir '" + (dir / "ckpt") +
                        "': already_exists: the rank 0 of another job "
                        "holds it"),
            1)
      << again.text();
  EXPECT_EQ(again.count("[rank 0] runtime: joined the coordination service"), 0) << again.text();
  log.read_all();
  ASSERT_EQ(exit_code(*first), 0) << log.text();
  EXPECT_EQ(log.digests(long_steps).size(), static_cast<size_t>(workers)) << log.text();
}

TEST(launch_demo_test, grace_period_saves_twice_and_resumes_from_the_final_checkpoint) {
  // Four seconds of 5 ms steps at least: the final save of a 3 s grace
  // period comes about 1.5 s after the notice (deadline - 1 s margin - the
  // save cycle), well before. With 1 s, no longer than the margin, the first
  // save would be the final one.
  constexpr int64_t grace_steps = 800;
  const std::vector<std::string> grace{"--grace-period", "3"};
  scratch_dir dir{"apps-grace"};
  auto reference = launch(dir / "reference", {}, grace, grace_steps);
  output_log ref{*reference};
  ref.read_all();
  ASSERT_EQ(exit_code(*reference), 0) << ref.text();
  auto expected = ref.digests(grace_steps);
  ASSERT_EQ(expected.size(), static_cast<size_t>(workers)) << ref.text();

  auto run = launch(dir / "ckpt", {}, grace, grace_steps);
  output_log log{*run};
  auto started = joined_workers(log, 0);
  ASSERT_EQ(started.size(), static_cast<size_t>(workers)) << log.text();
  ::kill(started[workers - 1], SIGTERM);
  log.read_all();
  ASSERT_EQ(exit_code(*run), 0) << log.text();
  EXPECT_EQ(log.digests(grace_steps), expected) << log.text();
  std::set<long long> agreed;
  for (auto step : log.agreed_steps()) agreed.insert(step);
  ASSERT_EQ(agreed.size(), 2u) << log.text();
  auto first = std::to_string(*agreed.begin());
  auto final = std::to_string(*agreed.rbegin());
  EXPECT_EQ(log.count("agreed to save at step " + first + " (grace period continues)"), workers)
      << log.text();
  EXPECT_EQ(log.count("agreed to save at step " + final + " (final)"), workers) << log.text();
  EXPECT_EQ(log.count("committed; exiting with restart code 42"), workers) << log.text();
  EXPECT_EQ(log.count("resumed at step " + final), workers) << log.text();
  for (auto step : agreed)
    EXPECT_TRUE(fs::exists(dir.path() / "ckpt" / lifeboat::checkpoint::step_dir_name(step)))
        << step << "\n"
        << log.text();
}

// Workers take only SIGTERM as a notice, so a forwarded SIGINT (Ctrl-C at
// the launcher) ends them: the launcher restarts none, whatever
// --max-restarts allows, and says which signal stopped the job. A worker
// still constructing its handler exits 3 (the start-up guard), one already
// training dies of the signal.
TEST(launch_demo_test, sigint_to_the_launcher_ends_the_workers_and_restarts_none) {
  scratch_dir dir{"apps-sigint"};
  auto run = launch(dir / "ckpt", {"--max-restarts", "3"}, {}, endless_steps);
  output_log log{*run};
  auto started = joined_workers(log, 0);
  ASSERT_EQ(started.size(), static_cast<size_t>(workers)) << log.text();
  run->kill(SIGINT);
  log.read_all();
  EXPECT_EQ(exit_code(*run), failure_exit_code) << log.text();
  EXPECT_TRUE(log.contains("lifeboat launch: SIGINT received; forwarding to every worker"))
      << log.text();
  EXPECT_TRUE(log.contains("lifeboat-launch: stopped by SIGINT: rank ")) << log.text();
  // One line per worker (the cause line after them names one of them again).
  EXPECT_EQ(log.count_if([](const std::string& l) {
    return l.rfind("lifeboat-launch: rank ", 0) == 0 &&
           (l.find(") was killed by SIGINT") != std::string::npos ||
            l.find(") exited with code 3") != std::string::npos);
  }),
            workers)
      << log.text();
  EXPECT_FALSE(log.contains("restarting after failure")) << log.text();
  EXPECT_TRUE(log.pids(1).empty()) << log.text();
  EXPECT_TRUE(none_outlived(started));
}

// A script that starts the launcher in the background ignores SIGINT there,
// and an ignored signal stays ignored across exec. The launcher still takes
// it (it waits for it blocked); its workers must not inherit the ignoring:
// once a worker's handler is constructed (the start-up guard gives SIGINT its
// inherited action back), a forwarded SIGINT would end none of them and the
// launcher would wait for ever. The SIGINT comes after a restart, when every
// worker said it resumed: past its construction.
TEST(launch_demo_test, sigint_ends_the_workers_of_a_launcher_started_with_sigint_ignored) {
  scratch_dir dir{"apps-sigint-ignored"};
  std::vector<std::string> argv{"/bin/sh",
                                "-c",
                                "trap '' INT; exec \"$@\"",
                                "sh",
                                lifeboat::test::built(LIFEBOAT_LAUNCH),
                                "--nproc",
                                std::to_string(workers),
                                "--max-restarts",
                                "1",
                                "--"};
  auto demo = demo_command(lifeboat::test::built(LIFEBOAT_DEMO), dir / "ckpt", endless_steps, 5);
  argv.insert(argv.end(), demo.begin(), demo.end());
  child_process run{argv, true, environment_with(hermetic_env)};
  output_log log{run};
  auto first = joined_workers(log, 0);
  ASSERT_EQ(first.size(), static_cast<size_t>(workers)) << log.text();
  ::kill(first.at(0), SIGTERM);
  ASSERT_TRUE(log.read_until_count("resumed at step", workers)) << log.text();
  auto second = log.pids(1);
  run.kill(SIGINT);
  // Without the fix the launcher waits for ever: fail well before ctest's bound.
  log.read_all(30s);
  EXPECT_EQ(exit_code(run, 5s), failure_exit_code) << log.text();
  EXPECT_EQ(log.count_if([](const std::string& l) {
    return l.rfind("lifeboat-launch: rank ", 0) == 0 &&
           l.find(") was killed by SIGINT") != std::string::npos;
  }),
            workers)
      << log.text();
  EXPECT_TRUE(none_outlived(second));
}

// The launcher and its workers, in a process group of their own (setsid), as
// a terminal's job is: `prefix` runs before the launcher. SIGHUP's action is
// the default here for the start, whatever this test's runner set (nohup).
std::unique_ptr<child_process> launch_in_own_group(const fs::path& ckpt,
                                                   const std::vector<std::string>& prefix) {
  std::vector<std::string> argv{"/usr/bin/setsid"};
  argv.insert(argv.end(), prefix.begin(), prefix.end());
  argv.insert(argv.end(), {lifeboat::test::built(LIFEBOAT_LAUNCH), "--nproc",
                           std::to_string(workers), "--port", std::to_string(unused_port()), "--"});
  auto demo = demo_command(lifeboat::test::built(LIFEBOAT_DEMO), ckpt, steps, 5);
  argv.insert(argv.end(), demo.begin(), demo.end());
  auto previous = std::signal(SIGHUP, SIG_DFL);
  auto run = std::make_unique<child_process>(argv, true, environment_with(hermetic_env));
  std::signal(SIGHUP, previous);
  return run;
}

// A terminal that hangs up (an SSH session lost) sends SIGHUP to its job's
// process group: every worker takes it as a notice (the launcher sends them a
// SIGTERM too), saves at one step, and the launcher exits with the restart
// code; a rerun ends with an uninterrupted run's digests.
TEST(launch_demo_test, a_hangup_saves_and_exits_with_the_restart_code) {
  scratch_dir dir{"apps-hangup"};
  auto expected = reference_digests(dir / "reference");
  auto run = launch_in_own_group(dir / "ckpt", {});
  output_log log{*run};
  auto started = joined_workers(log, 0);
  ASSERT_EQ(started.size(), static_cast<size_t>(workers)) << log.text();
  ::kill(-run->pid(), SIGHUP);
  log.read_all();
  ASSERT_EQ(exit_code(*run), restart_exit_code) << log.text();
  EXPECT_TRUE(
      log.contains("SIGHUP received (the terminal hung up?); sending SIGTERM to every "
                   "worker"))
      << log.text();
  auto agreed = log.agreed_steps();
  ASSERT_EQ(agreed.size(), static_cast<size_t>(workers)) << log.text();
  EXPECT_EQ(std::set<long long>(agreed.begin(), agreed.end()).size(), 1u) << log.text();
  auto rerun = launch(dir / "ckpt");
  output_log after{*rerun};
  after.read_all();
  ASSERT_EQ(exit_code(*rerun), 0) << after.text();
  EXPECT_EQ(after.digests(steps), expected) << after.text();
}

// Under nohup the job outlives its terminal: the hang-up changes nothing.
TEST(launch_demo_test, under_nohup_a_hangup_changes_nothing) {
  scratch_dir dir{"apps-nohup"};
  auto run = launch_in_own_group(dir / "ckpt", {"/usr/bin/nohup"});
  output_log log{*run};
  auto started = joined_workers(log, 0);
  ASSERT_EQ(started.size(), static_cast<size_t>(workers)) << log.text();
  ::kill(-run->pid(), SIGHUP);
  log.read_all();
  ASSERT_EQ(exit_code(*run), 0) << log.text();
  EXPECT_EQ(log.digests(steps).size(), static_cast<size_t>(workers)) << log.text();
  EXPECT_TRUE(log.agreed_steps().empty()) << log.text();
  EXPECT_FALSE(log.contains("SIGHUP")) << log.text();
}

// A notice after the last step finds nothing to save, and the worker still
// exits 0: SIGTERMs come every millisecond from its digest line until it is
// gone, so some land after its handler has ended too.
TEST(launch_demo_test, sigterms_after_the_last_step_never_fail_a_finished_worker) {
  scratch_dir dir{"apps-late-sigterm"};
  child_process run{{lifeboat::test::built(LIFEBOAT_DEMO), "--checkpoint-dir", dir / "ckpt",
                     "--steps", "20", "--state-mb", "1"},
                    true,
                    environment_with(hermetic_env)};
  output_log log{run};
  ASSERT_TRUE(log.read_until("digest=")) << log.text();
  auto until = std::chrono::steady_clock::now() + run_deadline;
  std::optional<int> status;
  while (!(status = run.wait_exit(1ms)) && std::chrono::steady_clock::now() < until)
    run.kill(SIGTERM);
  ASSERT_TRUE(status) << "still running after " << run_deadline.count() << " ms\n" << log.text();
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << "wait status " << *status << "\n"
                                                               << log.text();
}

// --restart-code reaches the workers: they exit with it after the commit, and
// the launcher restarts them on it (no failure) until they finish.
TEST(launch_demo_test, restart_code_flag_is_what_workers_exit_with_and_restart_on) {
  scratch_dir dir{"apps-restart-code"};
  auto run = launch(dir / "ckpt", {"--restart-code", "7"});
  output_log log{*run};
  auto started = joined_workers(log, 0);
  ASSERT_EQ(started.size(), static_cast<size_t>(workers)) << log.text();
  ::kill(started[1], SIGTERM);
  log.read_all();
  EXPECT_EQ(exit_code(*run), 0) << log.text();
  EXPECT_EQ(log.count("committed; exiting with restart code 7"), workers) << log.text();
  EXPECT_EQ(log.pids(1).size(), static_cast<size_t>(workers)) << log.text();
  EXPECT_FALSE(log.contains("restarting after failure")) << log.text();
  EXPECT_EQ(log.digests(steps).size(), static_cast<size_t>(workers)) << log.text();
}

TEST(launch_demo_test, a_failing_worker_fails_everyone_and_counts_against_max_restarts) {
  scratch_dir dir{"apps-failing"};
  auto run =
      launch(dir / "ckpt", {"--max-restarts", "1"}, {"--fail-rank", "2", "--fail-step", "5"});
  output_log log{*run};
  log.read_all();
  EXPECT_EQ(exit_code(*run), failure_exit_code) << log.text();
  // Both generations ran (one failure allowed), no third one.
  EXPECT_EQ(log.pids(1).size(), static_cast<size_t>(workers)) << log.text();
  EXPECT_TRUE(log.pids(2).empty()) << log.text();
  EXPECT_TRUE(log.contains("restarting after failure 1 of at most 1")) << log.text();
  // Every worker exited 3 in both generations (the launcher saw the codes).
  for (int generation = 0; generation < 2; ++generation)
    for (auto [rank, pid] : log.pids(generation))
      EXPECT_TRUE(log.contains("lifeboat-launch: rank " + std::to_string(rank) + " (pid " +
                               std::to_string(pid) + ") exited with code 3"))
          << log.text();
  // Each time the launcher names where the failure began, not the first exit.
  auto origin = "rank 2 failed: injected failure at step 5";
  EXPECT_TRUE(log.contains("restarting after failure 1 of at most 1: " + std::string{origin}))
      << log.text();
  EXPECT_TRUE(log.contains("lifeboat-launch: giving up: " + std::string{origin} + " (2 failure(s)"))
      << log.text();
}

// SIGKILL gives no notice: the launcher sees a worker killed by a signal,
// counts it against --max-restarts, and takes the rest of the group down.
TEST(launch_demo_test, killed_workers_count_against_max_restarts_and_leave_no_orphan) {
  scratch_dir dir{"apps-killed"};
  constexpr int victim = 1;
  // --status-port 0 for its log line: a worker starts its status endpoint
  // once it restored and its actors run, i.e. when training starts, so the
  // kill lands in training (the test after this one covers a worker that
  // ends before it joins).
  auto run = launch(dir / "ckpt", {"--max-restarts", "1", "--status-port", "0"}, {}, endless_steps);
  output_log log{*run};
  std::vector<pid_t> every_worker;
  for (int generation = 0; generation < 2; ++generation) {
    ASSERT_TRUE(log.read_until_count(worker_status_listening, (generation + 1) * workers))
        << log.text();
    auto started = log.pids(generation);
    ASSERT_EQ(started.size(), static_cast<size_t>(workers)) << log.text();
    for (auto [rank, pid] : started) every_worker.push_back(pid);
    ::kill(started[victim], SIGKILL);
    if (generation == 0) {
      ASSERT_TRUE(log.read_until("restarting after failure 1 of at most 1")) << log.text();
      // Peers learnt of the loss and exited 3 themselves, not killed at a timeout.
      for (auto [rank, pid] : started) {
        if (rank != victim) {
          EXPECT_TRUE(log.contains("lifeboat-launch: rank " + std::to_string(rank) + " (pid " +
                                   std::to_string(pid) + ") exited with code 3"))
              << log.text();
        }
        // None of the first generation is left when the second starts.
        EXPECT_TRUE(gone_within(pid, 0ms)) << "rank " << rank;
      }
    }
  }
  log.read_all();
  EXPECT_EQ(exit_code(*run), failure_exit_code) << log.text();
  auto killed = "rank 1 (pid " + std::to_string(log.pids(1)[victim]) + ") was killed by SIGKILL";
  EXPECT_TRUE(log.contains("lifeboat-launch: giving up: " + killed)) << log.text();
  EXPECT_TRUE(log.pids(2).empty()) << log.text();
  for (auto pid : every_worker)
    EXPECT_TRUE(gone_within(pid, orphan_deadline)) << "pid " << pid << " outlived it";
}

// A worker that stops answering (SIGSTOP here: a frozen process, a host
// swapping) keeps its connection open: the service declares it lost after the
// heartbeat timeout and its peers exit 3, but its process never ends by
// itself. The launcher kills it as lost then, instead of waiting for it until
// the failed group's deadline (30 s) and only then restarting or giving up.
TEST(launch_demo_test, a_stopped_worker_is_killed_once_the_service_declares_it_lost) {
  scratch_dir dir{"apps-stopped"};
  constexpr int victim = 2;
  auto run = launch(dir / "ckpt", {"--max-restarts", "0", "--status-port", "0"}, {}, endless_steps);
  output_log log{*run};
  ASSERT_TRUE(log.read_until_count(worker_status_listening, workers)) << log.text();
  auto started = log.pids(0);
  ASSERT_EQ(started.size(), static_cast<size_t>(workers)) << log.text();
  ::kill(started[victim], SIGSTOP);
  log.read_all();
  EXPECT_EQ(exit_code(*run), failure_exit_code) << log.text();
  EXPECT_TRUE(log.contains("lifeboat-launch: rank 2 (pid " + std::to_string(started[victim]) +
                           ") was lost and killed"))
      << log.text();
  EXPECT_TRUE(log.contains("lifeboat-launch: giving up: rank 2 was lost: no heartbeat for "))
      << log.text();
  EXPECT_FALSE(log.contains("did not exit in time")) << log.text();
  for (auto [rank, pid] : started) {
    if (rank == victim) continue;
    EXPECT_TRUE(log.contains("lifeboat-launch: rank " + std::to_string(rank) + " (pid " +
                             std::to_string(pid) + ") exited with code 3"))
        << log.text();
  }
}

// A worker that ends before it joins (here rank 1 exits 7 before the demo
// starts: a bad import, a missing file) has no connection whose end would tell
// its peers; the launcher tells the coordination service, so the peers, which
// joined and wait for it in the restore agreement, fail at once naming rank 1
// and exit 3 instead of being killed at the failed group's deadline (30 s).
TEST(launch_demo_test, a_worker_that_ends_before_it_joins_fails_its_peers_at_once) {
  scratch_dir dir{"apps-unjoined"};
  constexpr int victim = 1;
  auto run = launch(
      dir / "ckpt", {"--max-restarts", "0"}, {}, steps,
      {"/bin/sh", "-c",
       "[ \"$LIFEBOAT_RANK\" = " + std::to_string(victim) + " ] && exit 7; exec \"$@\"", "worker"});
  output_log log{*run};
  log.read_all();
  EXPECT_EQ(exit_code(*run), failure_exit_code) << log.text();
  auto started = log.pids(0);
  ASSERT_EQ(started.size(), static_cast<size_t>(workers)) << log.text();
  EXPECT_TRUE(log.contains("lifeboat-launch: giving up: rank 1 (pid " +
                           std::to_string(started[victim]) + ") exited with code 7"))
      << log.text();
  for (auto [rank, pid] : started) {
    if (rank == victim) continue;
    EXPECT_TRUE(log.contains("lifeboat-launch: rank " + std::to_string(rank) + " (pid " +
                             std::to_string(pid) + ") exited with code 3"))
        << log.text();
  }
  EXPECT_FALSE(log.contains("did not exit in time")) << log.text();
  auto errors_naming_rank_1 = log.count_if([](const std::string& line) {
    return line.rfind("lifeboat-demo: ", 0) == 0 && line.find(" error: ") != std::string::npos &&
           line.find("rank 1 ") != std::string::npos;
  });
  EXPECT_EQ(errors_naming_rank_1, workers - 1) << log.text();
}

}  // namespace
