// lifeboat-launch's command line, the environment it gives each worker and
// how it reports their end, checked with a shell as the worker command:
// quick, and free of the coordination and checkpoint machinery that the
// end-to-end tests cover.

#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/apps/app_test_support.hpp"
#include "tests/apps/status_client.hpp"
#include "tests/support/build_tree.hpp"
#include "tests/support/loopback_port.hpp"

namespace {

using namespace lifeboat::test;

constexpr int workers = 3;
constexpr int usage_exit_code = 2;
// How the launcher ends when its SIGTERM killed workers before any save.
const std::string sigterm_before_any_save =
    "lifeboat-launch: stopped by SIGTERM before the workers could save: rank ";
// Each worker prints the variables the launcher set for it, then exits 0.
const std::string print_env =
    "echo \"worker rank=$LIFEBOAT_RANK world=$LIFEBOAT_WORLD_SIZE "
    "restart=$LIFEBOAT_RESTART_COUNT status_port=${LIFEBOAT_STATUS_PORT-unset} "
    "coordinator=$LIFEBOAT_COORDINATOR\"";

// lifeboat-launch with `flags`, each of `nproc` workers a shell running `script`.
std::vector<std::string> launcher(const std::vector<std::string>& flags,
                                  const std::string& script = print_env, int nproc = workers) {
  std::vector<std::string> argv{lifeboat::test::built(LIFEBOAT_LAUNCH), "--nproc",
                                std::to_string(nproc)};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"--", "/bin/sh", "-c", script});
  return argv;
}

// Below Linux's ephemeral ports (32768 and up), where no port 0 of another
// test lands. Each test that names a base has its own, as ctest runs them side
// by side: the workers take BASE..BASE + nproc - 1, the launcher BASE + nproc.
constexpr int workers_status_base = 21000;
constexpr int launcher_status_base = 21100;

TEST(launch_flags_test, status_port_base_gives_rank_r_base_plus_r) {
  constexpr int base = workers_status_base;
  child_process run{launcher({"--status-port", std::to_string(base)}), true};
  output_log log{run};
  log.read_all();
  EXPECT_EQ(exit_code(run), 0) << log.text();
  for (int rank = 0; rank < workers; ++rank)
    EXPECT_TRUE(log.contains("worker rank=" + std::to_string(rank) + " world=3 restart=0" +
                             " status_port=" + std::to_string(base + rank)))
        << log.text();
}

TEST(launch_flags_test, status_port_zero_lets_every_worker_pick_a_free_port) {
  child_process run{launcher({"--status-port", "0"}), true};
  output_log log{run};
  log.read_all();
  EXPECT_EQ(exit_code(run), 0) << log.text();
  EXPECT_EQ(log.count("status_port=0"), workers) << log.text();
}

TEST(launch_flags_test, without_status_port_no_worker_serves_one) {
  child_process run{launcher({}), true};
  output_log log{run};
  log.read_all();
  EXPECT_EQ(exit_code(run), 0) << log.text();
  EXPECT_EQ(log.count("status_port=unset"), workers) << log.text();
  EXPECT_TRUE(log.contains("lifeboat-launch: all 3 workers finished")) << log.text();
}

// The launcher hosts the coordination service, so it serves the
// coordinator's view: rank -1 and one row per worker (these never join).
TEST(launch_flags_test, the_launcher_serves_the_workers_view_on_base_plus_nproc) {
  auto status_port = static_cast<uint16_t>(launcher_status_base + workers);
  child_process run{
      launcher({"--status-port", std::to_string(launcher_status_base)}, "exec sleep 60"), true};
  output_log log{run};
  ASSERT_TRUE(
      log.read_until("status endpoint listening on 127.0.0.1:" + std::to_string(status_port)))
      << log.text();
  ASSERT_TRUE(log.read_until_count("lifeboat-launch: rank=", workers)) << log.text();
  std::string raw;
  auto status = fetch_status(status_port, &raw);
  ASSERT_TRUE(status) << raw;
  EXPECT_EQ(status->rank(), -1) << raw;
  EXPECT_EQ(status->world_size(), workers) << raw;
  ASSERT_EQ(status->workers_size(), workers) << raw;
  for (const auto& worker : status->workers()) EXPECT_EQ(worker.state(), "joining") << raw;
  run.kill(SIGTERM);
  log.read_all();
  EXPECT_EQ(exit_code(run), restart_exit_code) << log.text();
  EXPECT_TRUE(log.contains(sigterm_before_any_save)) << log.text();
}

TEST(launch_flags_test, a_status_port_range_past_65535_is_a_usage_error) {
  // Ranks 0..2 would fit; the launcher's own BASE + 3 would not.
  child_process run{launcher({"--status-port", "65533"}), true};
  output_log log{run};
  log.read_all();
  EXPECT_EQ(exit_code(run), usage_exit_code) << log.text();
  EXPECT_TRUE(log.contains("--status-port 65533 runs past port 65535")) << log.text();
  EXPECT_FALSE(log.contains("worker rank=")) << log.text();
}

TEST(launch_flags_test, port_is_where_the_service_listens_and_the_workers_look) {
  auto port = std::to_string(unused_port());
  child_process run{launcher({"--port", port}), true};
  output_log log{run};
  log.read_all();
  EXPECT_EQ(exit_code(run), 0) << log.text();
  EXPECT_EQ(log.count("coordinator=127.0.0.1:" + port), workers) << log.text();
  EXPECT_TRUE(log.contains("listening on port " + port)) << log.text();
}

// A port that something else holds: a clear error naming it, and no worker
// started against a service that is not there.
TEST(launch_flags_test, a_port_in_use_fails_before_any_worker_starts) {
  held_port taken;
  auto port = std::to_string(taken.port());
  child_process run{launcher({"--port", port}), true};
  output_log log{run};
  log.read_all();
  EXPECT_EQ(exit_code(run), failure_exit_code) << log.text();
  EXPECT_TRUE(log.contains("cannot host the coordination service on port " + port)) << log.text();
  EXPECT_FALSE(log.contains("worker rank=")) << log.text();
}

// PORT + 1, the workers' MASTER_PORT, held by something else (another job's
// service beside this one's): said before the workers start, since torch's
// store would fail in rank 0's init_process_group, far from the cause. The
// job itself goes on (its workers need not be torch's).
TEST(launch_flags_test, a_taken_master_port_is_named_before_the_workers_start) {
  std::unique_ptr<held_port> above;
  uint16_t port = 0;
  for (int tries = 0; tries < 20 && port == 0; ++tries) {
    above = std::make_unique<held_port>();
    held_port free_below{AF_INET, static_cast<uint16_t>(above->port() - 1)};
    port = free_below.port();
  }
  ASSERT_NE(port, 0);
  child_process run{launcher({"--port", std::to_string(port)}), true};
  output_log log{run};
  log.read_all();
  EXPECT_EQ(exit_code(run), 0) << log.text();
  EXPECT_TRUE(log.contains("MASTER_PORT " + std::to_string(above->port()) +
                           " (where torch's env:// rendezvous listens, in rank 0) is taken: "
                           "cannot listen on 127.0.0.1:" +
                           std::to_string(above->port()) + ": Address already in use"))
      << log.text();
}

// A SIGTERM to the launcher while it is still starting workers reaches the
// ones started after it too: the launcher sends it again once all are started.
// Many workers make the start long enough (tens of ms) for the signal, sent as
// soon as rank 0 is started, to land in it; each worker is a sleep that the
// signal kills. A worker the signal missed would sleep on until the failed
// generation's deadline and be described as not exiting in time. Workers the
// notice ended before they could save leave the latest checkpoint as it was:
// the launcher exits with the restart code, restarting none itself.
TEST(launch_flags_test, a_sigterm_during_the_start_reaches_every_worker) {
  constexpr int many = 64;
  child_process run{launcher({}, "exec sleep 600", many), true};
  output_log log{run};
  ASSERT_TRUE(log.read_until("lifeboat-launch: rank=0 ")) << log.text();
  run.kill(SIGTERM);
  log.read_all();
  EXPECT_EQ(exit_code(run), restart_exit_code) << log.text();
  EXPECT_EQ(log.count("lifeboat-launch: rank="), many) << log.text();
  auto killed = log.count_if([](const std::string& line) {
    return line.rfind("lifeboat-launch: rank ", 0) == 0 &&
           line.find(") was killed by SIGTERM") != std::string::npos;
  });
  EXPECT_EQ(killed, many) << log.text();
  EXPECT_FALSE(log.contains("did not exit in time")) << log.text();
  EXPECT_TRUE(log.contains(sigterm_before_any_save)) << log.text();
  EXPECT_FALSE(log.contains("restart=1")) << log.text();
}

// Workers that exit with the restart code though none recorded a notice (a
// shell: no lifeboat in it) are started again at once five times, then each
// start waits twice as long as the one before; a SIGTERM during the wait
// ends the job with the restart code, the latest checkpoint as it was.
TEST(launch_flags_test, restart_code_exits_without_a_notice_back_off_until_a_sigterm) {
  child_process run{launcher({}, "exit 42", 1), true};
  output_log log{run};
  ASSERT_TRUE(log.read_until("lifeboat-launch: waiting 1 s before the next start: 6 generations"))
      << log.text();
  // The line comes before its wait: the six starts so far came at once.
  EXPECT_EQ(log.count("lifeboat-launch: rank="), 6) << log.text();
  ASSERT_TRUE(log.read_until("lifeboat-launch: waiting 2 s before the next start: 7 generations"))
      << log.text();
  run.kill(SIGTERM);
  log.read_all();
  EXPECT_EQ(exit_code(run), restart_exit_code) << log.text();
  EXPECT_EQ(log.count("lifeboat-launch: rank="), 7) << log.text();
  EXPECT_EQ(log.count("workers exited with the restart code, but none recorded a notice"), 7)
      << log.text();
  EXPECT_FALSE(log.contains("saved a checkpoint")) << log.text();
  EXPECT_TRUE(log.contains(
      "lifeboat-launch: stopped by SIGTERM while waiting for the next start: no worker is running"))
      << log.text();
}

// SIGUSR1 and SIGUSR2 from outside (a scheduler signalling every process)
// end neither the launcher nor its workers where the workers take no notice
// from them: they are ignored, with a line, and a SIGTERM is still a notice.
TEST(launch_flags_test, sigusr1_and_sigusr2_are_ignored_where_they_are_no_notice) {
  child_process run{launcher({}, "echo started; exec sleep 600"), true};
  output_log log{run};
  ASSERT_TRUE(log.read_until_count("started", workers)) << log.text();
  run.kill(SIGUSR1);
  ASSERT_TRUE(log.read_until("SIGUSR1 received: no notice to this job's workers")) << log.text();
  run.kill(SIGUSR2);
  ASSERT_TRUE(log.read_until("SIGUSR2 received: no notice to this job's workers")) << log.text();
  run.kill(SIGTERM);
  log.read_all();
  EXPECT_EQ(exit_code(run), restart_exit_code) << log.text();
  EXPECT_TRUE(log.contains(sigterm_before_any_save)) << log.text();
  EXPECT_FALSE(log.contains("killed by SIGUSR")) << log.text();
}

// Under SLURM (its --signal=USR1@N before a time limit) SIGUSR1 is a notice
// to the workers, so the launcher forwards it as it does SIGTERM: workers it
// ended before they could save leave the latest checkpoint as it was, and
// the launcher exits with the restart code for the job to be requeued.
TEST(launch_flags_test, under_slurm_sigusr1_is_forwarded_as_a_notice) {
  child_process run{launcher({}, "echo started; exec sleep 600"), true,
                    environment_with({{"SLURM_JOB_ID", "7"}})};
  output_log log{run};
  ASSERT_TRUE(log.read_until_count("started", workers)) << log.text();
  run.kill(SIGUSR1);
  log.read_all();
  EXPECT_EQ(exit_code(run), restart_exit_code) << log.text();
  EXPECT_TRUE(log.contains("SIGUSR1 received; forwarding to every worker")) << log.text();
  EXPECT_TRUE(log.contains("lifeboat-launch: stopped by SIGUSR1 before the workers could save"))
      << log.text();
  EXPECT_FALSE(log.contains("restart=1")) << log.text();
}

// Ctrl-C twice: the first SIGINT is forwarded, and workers that ignore it
// (or are stuck where it cannot reach them) are killed by the second.
TEST(launch_flags_test, a_second_sigint_kills_workers_that_ignore_the_first) {
  child_process run{launcher({},
                             "trap '' INT; echo ignoring SIGINT; "
                             "while :; do sleep 1; done"),
                    true};
  output_log log{run};
  ASSERT_TRUE(log.read_until_count("ignoring SIGINT", workers)) << log.text();
  run.kill(SIGINT);
  ASSERT_TRUE(log.read_until("SIGINT received; forwarding to every worker")) << log.text();
  run.kill(SIGINT);
  // Long for a few shells to be killed; short beside workers that ignored
  // both signals and sleep on.
  constexpr auto kill_bound = 30s;
  log.read_all(kill_bound);
  EXPECT_EQ(exit_code(run, kill_bound), failure_exit_code) << log.text();
  EXPECT_TRUE(log.contains("SIGINT received again; killing every worker")) << log.text();
  auto killed = log.count_if([](const std::string& line) {
    return line.rfind("lifeboat-launch: rank ", 0) == 0 &&
           line.find(") was killed by SIGKILL") != std::string::npos;
  });
  EXPECT_EQ(killed, workers) << log.text();
  EXPECT_TRUE(log.contains("lifeboat-launch: stopped by SIGINT: rank ")) << log.text();
}

// Workers that ignore a forwarded SIGTERM and record no notice (no lifeboat
// handler) are killed once unheeded_signal_bound (30 s) passed: before, the
// launcher waited for them for ever where no SIGKILL followed (`timeout`
// without -k). Nothing was saved, the latest checkpoint stands: exit 42.
TEST(launch_flags_test, workers_that_ignore_a_sigterm_are_killed_after_30_s) {
  child_process run{launcher({}, "trap '' TERM; echo ignoring SIGTERM; exec sleep 600"), true};
  output_log log{run};
  ASSERT_TRUE(log.read_until_count("ignoring SIGTERM", workers)) << log.text();
  run.kill(SIGTERM);
  ASSERT_TRUE(log.read_until("SIGTERM received; forwarding to every worker")) << log.text();
  constexpr auto past_the_bound = 90s;
  log.read_all(past_the_bound);
  EXPECT_EQ(exit_code(run, past_the_bound), restart_exit_code) << log.text();
  EXPECT_TRUE(
      log.contains("lifeboat-launch: SIGTERM was forwarded 30 s ago and no worker took it "
                   "as a notice or exited"))
      << log.text();
  auto killed = log.count_if([](const std::string& line) {
    return line.rfind("lifeboat-launch: rank ", 0) == 0 &&
           line.find(") outlived the signal it was sent and was killed") != std::string::npos;
  });
  EXPECT_EQ(killed, workers) << log.text();
  EXPECT_TRUE(log.contains(sigterm_before_any_save)) << log.text();
}

// The pid in the worker's "left pid=PID" line: the process it leaves behind
// (0 where the line never came).
pid_t left_pid(output_log& log) {
  auto left = log.read_until("left pid=");
  return left ? static_cast<pid_t>(std::stoi(left->substr(left->find('=') + 1))) : 0;
}

// One worker running `script`, which prints "left pid=PID" for the process
// it leaves behind: the launcher exits with `code`, ends `ended` process(es)
// left by generation 0 and says so, and that process is gone (`outlived`
// says what it outlived otherwise).
void expect_what_was_left_behind_is_ended(const std::string& script, int code, int ended,
                                          const std::string& outlived) {
  child_process run{launcher({}, script, 1), true};
  output_log log{run};
  auto pid = left_pid(log);
  ASSERT_NE(pid, 0) << log.text();
  log.read_all();
  EXPECT_EQ(exit_code(run), code) << log.text();
  EXPECT_TRUE(log.contains("lifeboat-launch: ended " + std::to_string(ended) +
                           " process(es) that the workers of generation 0 left behind"))
      << log.text();
  EXPECT_TRUE(gone_within(pid, orphan_deadline)) << "pid " << pid << " outlived " << outlived;
}

// A process a worker leaves behind (here a shell's background child; in a
// job, a DataLoader or pool worker of a worker that was killed, holding its
// ports and GPU memory) is ended before the next generation starts.
TEST(launch_flags_test, what_the_workers_left_behind_is_ended_before_the_next_generation) {
  expect_what_was_left_behind_is_ended(
      "if [ \"$LIFEBOAT_RESTART_COUNT\" = 0 ]; then "
      "sleep 600 >/dev/null 2>&1 & echo \"left pid=$!\"; exit 42; fi; exit 0",
      0, 1, "its generation");
}

// A launcher that exits otherwise than 0 ends what its last generation's
// workers left behind, and the children of those: here a background subshell
// with a child of its own. Before, both outlived the job on the host.
TEST(launch_flags_test, what_a_failed_job_left_behind_is_ended_when_the_launcher_exits) {
  // The worker exits once the subshell has started its child (a fifo, read
  // as the subshell writes the child's pid to it): a launcher that came
  // first would end a subshell without one.
  expect_what_was_left_behind_is_ended(
      "f=$(mktemp -u); mkfifo \"$f\"; "
      "( sleep 600 >/dev/null 2>&1 & echo $! > \"$f\"; exec >/dev/null 2>&1; wait ) & "
      "read -r pid < \"$f\"; rm -f \"$f\"; echo \"left pid=$pid\"; exit 3",
      failure_exit_code, 2, "the launcher");
}

// A job done may have started what is meant to outlive it (an upload of the
// final model): it goes on, and the launcher says so.
TEST(launch_flags_test, what_a_job_done_left_behind_goes_on_and_is_named) {
  child_process run{launcher({}, "sleep 600 >/dev/null 2>&1 & echo \"left pid=$!\"; exit 0", 1),
                    true};
  output_log log{run};
  auto pid = left_pid(log);
  ASSERT_NE(pid, 0) << log.text();
  log.read_all();
  EXPECT_EQ(exit_code(run), 0) << log.text();
  EXPECT_TRUE(
      log.contains("lifeboat-launch: 1 process(es) that the workers left behind go on: "
                   "every worker exited 0"))
      << log.text();
  EXPECT_EQ(::kill(pid, 0), 0) << "pid " << pid << " was ended";
  ::kill(pid, SIGKILL);
}

// Rank 1 is killed from outside after its peers exited 3 (as peers do when
// they lose one): the launcher names the killed worker as the cause, not the
// first one it reaped.
TEST(launch_flags_test, the_failure_named_is_the_cause_not_the_first_exit) {
  child_process run{
      launcher({}, "if [ \"$LIFEBOAT_RANK\" = 1 ]; then sleep 0.3; kill -9 $$; fi; exit 3"), true};
  output_log log{run};
  log.read_all();
  EXPECT_EQ(exit_code(run), failure_exit_code) << log.text();
  auto killed = "rank 1 (pid " + std::to_string(log.pids(0).at(1)) + ") was killed by SIGKILL";
  EXPECT_TRUE(log.contains("lifeboat-launch: giving up: " + killed)) << log.text();
}

// A command that cannot run fails every generation alike: it is refused
// before any worker starts. Before, each of --max-restarts' restarts ran it
// again (exit 127 from every worker, 4 generations here) and the launcher
// gave up with the failure code.
TEST(launch_flags_test, a_command_that_cannot_run_is_a_usage_error) {
  child_process run{{lifeboat::test::built(LIFEBOAT_LAUNCH), "--nproc", "2", "--max-restarts", "3",
                     "--", "no-such-program-of-lifeboat"},
                    true};
  output_log log{run};
  log.read_all();
  EXPECT_EQ(exit_code(run), usage_exit_code) << log.text();
  EXPECT_TRUE(log.contains(
      "lifeboat-launch: cannot run 'no-such-program-of-lifeboat': No such file or directory"))
      << log.text();
  EXPECT_FALSE(log.contains("lifeboat-launch: rank=")) << log.text();
}

// Workers that exit 2 found a configuration that cannot work: one
// generation, then the launcher exits 2, whatever --max-restarts allows.
TEST(launch_flags_test, workers_that_exit_2_are_not_restarted_and_the_launcher_exits_2) {
  child_process run{launcher({"--max-restarts", "3"}, "exit 2"), true};
  output_log log{run};
  log.read_all();
  EXPECT_EQ(exit_code(run), usage_exit_code) << log.text();
  EXPECT_EQ(log.count("lifeboat-launch: rank="), workers) << log.text();
  EXPECT_TRUE(log.contains(": a configuration that cannot work, which no restart changes"))
      << log.text();
}

TEST(launch_flags_test, without_nproc_it_is_a_usage_error) {
  child_process run{{lifeboat::test::built(LIFEBOAT_LAUNCH), "--", "/bin/sh", "-c", print_env},
                    true};
  output_log log{run};
  log.read_all();
  EXPECT_EQ(exit_code(run), usage_exit_code) << log.text();
  EXPECT_TRUE(log.contains("--nproc N is required")) << log.text();
  EXPECT_FALSE(log.contains("worker rank=")) << log.text();
}

}  // namespace
