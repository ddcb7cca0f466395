// A job of three hosts with two workers each (world size 6), every host a
// network namespace of its own (tests/support/network_namespaces.hpp), and
// what happens when one of them is cut off or dies:
// - host 2's link cut: hosts 0 and 1's workers exit 3 naming ranks 4 and 5,
//   host 2's exit 3 naming the coordination service, each within the
//   heartbeat bound; no checkpoint is committed after the cut, not even by
//   the cut-off host's worker that got a notice; with --max-restarts 1 and
//   the link back, the job restarts and ends with an uninterrupted run's
//   digests. A launcher with another token was refused at the start.
// - host 1's launcher SIGKILLed: its workers are gone within 1 s, the other
//   hosts' workers exit 3 naming ranks 2 and 3.
// Skipped where namespaces cannot be created (not root, no CAP_NET_ADMIN).

#include <signal.h>

#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/apps/netns_job.hpp"
#include "tests/support/build_tree.hpp"

namespace {

using namespace lifeboat::test;

// Long enough (600 steps of 5 ms) that the cut lands in training after a
// restart from the step of the first notice.
constexpr int64_t steps = 600;
constexpr int nodes = 3;
constexpr int per_node = 2;
constexpr int workers = nodes * per_node;
constexpr const char* token = "multi-node-partition-test";
// termination_config's default heartbeat_timeout: a peer silent this long is
// lost, on both sides of a cut.
constexpr auto heartbeat_bound = 10s;
// What a busy 2-core machine adds to the bound: the workers' error handling
// and exit, the launchers' reaping.
constexpr auto busy_machine_slack = 20s;
// A launcher killed outright takes its workers with it (PR_SET_PDEATHSIG).
constexpr auto workers_gone_deadline = 1s;

std::vector<std::string> demo(const std::string& ckpt, int64_t run_steps) {
  return demo_command(lifeboat::test::built(LIFEBOAT_DEMO), ckpt, run_steps, 5);
}

// Lines of a log in which a worker reports its error naming all of `what`.
int errors_naming(const output_log& log, const std::vector<std::string>& what) {
  return log.count_if([&](const std::string& line) {
    if (line.rfind("lifeboat-demo: ", 0) != 0 || line.find(" error: ") == std::string::npos)
      return false;
    for (const auto& w : what)
      if (line.find(w) == std::string::npos) return false;
    return true;
  });
}

bool workers_reported(output_log& log, const std::vector<std::string>& what,
                      std::chrono::steady_clock::time_point until) {
  return log.read_until([&](const std::string&) { return errors_naming(log, what) >= per_node; },
                        std::chrono::duration_cast<std::chrono::milliseconds>(
                            until - std::chrono::steady_clock::now())) ||
         errors_naming(log, what) >= per_node;
}

TEST(multi_node_partition_test, a_cut_host_commits_nothing_and_the_job_restarts_bit_exact) {
  network_namespaces net{nodes};
  if (!net.ok())
    GTEST_SKIP() << "cannot create network namespaces with " << ip_command << " (needs root)";
  scratch_dir dir{"multi-node-partition"};
  std::vector<std::string> ref_argv{lifeboat::test::built(LIFEBOAT_LAUNCH), "--nproc",
                                    std::to_string(workers), "--"};
  for (auto& a : demo(dir / "reference", steps)) ref_argv.push_back(a);
  child_process reference{ref_argv, true, netns_job_env(token)};
  output_log ref{reference};
  ref.read_all();
  ASSERT_EQ(exit_code(reference), 0) << ref.text();
  auto expected = ref.digests(steps);
  ASSERT_EQ(expected.size(), static_cast<size_t>(workers)) << ref.text();

  auto ckpt = dir / "ckpt";
  auto launcher = [&](int k) {
    return netns_launcher(net, k, nodes, per_node, {"--max-restarts", "1"}, demo(ckpt, steps));
  };
  netns_job job;
  job.start(launcher(0), token);
  auto& logs = job.logs;
  ASSERT_TRUE(logs[0]->read_until("waiting for the launchers of 2 other node(s)")) << job.text();
  // A launcher with another token, as node 1: refused, and the job goes on.
  child_process stranger{launcher(1), true, netns_job_env("another-token")};
  output_log stranger_log{stranger};
  stranger_log.read_all();
  EXPECT_EQ(exit_code(stranger), failure_exit_code) << stranger_log.text();
  EXPECT_TRUE(stranger_log.contains("refused this launcher")) << stranger_log.text();
  EXPECT_FALSE(stranger_log.contains("lifeboat-launch: rank=")) << stranger_log.text();
  job.start(launcher(1), token);
  job.start(launcher(2), token);

  // A notice first, so that the cut finds a committed checkpoint to keep.
  ASSERT_TRUE(logs[0]->read_until_count(" joined (generation 0)", workers)) << job.text();
  ASSERT_TRUE(logs[1]->read_until("lifeboat-launch: rank=3 ")) << job.text();
  ::kill(logs[1]->pids(0).at(3), SIGTERM);
  ASSERT_TRUE(logs[0]->read_until_count(" joined (generation 1)", workers)) << job.text();
  auto before_cut = committed_steps(ckpt);
  ASSERT_EQ(before_cut.size(), 1u) << job.text();

  // Host 2's workers train (a notice before that ends a worker at once with
  // the restart code, see startup_guard, and there would be nothing to save).
  ASSERT_TRUE(logs[2]->read_until_count("resumed at step", per_node)) << job.text();
  auto cut_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(net.cut(2));
  // The cut-off host tries to save alone: a notice to one of its workers.
  ::kill(logs[2]->pids(1).at(4), SIGTERM);
  auto until = cut_at + heartbeat_bound + busy_machine_slack;
  EXPECT_TRUE(workers_reported(*logs[0], {"rank 4", "rank 5"}, until)) << job.text();
  EXPECT_TRUE(workers_reported(*logs[1], {"rank 4", "rank 5"}, until)) << job.text();
  EXPECT_TRUE(workers_reported(*logs[2], {"coordination service"}, until)) << job.text();
  auto reported_after = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - cut_at);
  EXPECT_EQ(committed_steps(ckpt), before_cut) << job.text();
  // Host 2's workers committed only the notice's checkpoint, before the cut.
  EXPECT_EQ(logs[2]->count("committed; exiting with restart code"), per_node) << job.text();
  ASSERT_TRUE(net.restore(2));

  std::map<int, pid_t> cut_generation;
  std::map<int, std::string> digests;
  for (int k = 0; k < nodes; ++k) {
    for (auto& [rank, pid] : logs[k]->pids(1)) cut_generation[rank] = pid;
    logs[k]->read_all();
    EXPECT_EQ(exit_code(*job.launchers[k]), 0) << job.text();
    EXPECT_EQ(logs[k]->pids(2).size(), static_cast<size_t>(per_node)) << job.text();
    for (auto& [rank, digest] : logs[k]->digests(steps)) digests[rank] = digest;
  }
  EXPECT_EQ(digests, expected) << job.text();
  EXPECT_EQ(committed_steps(ckpt), before_cut) << job.text();
  // Node 0's launcher, which decided the restart, names every exit.
  for (auto [rank, pid] : cut_generation)
    EXPECT_EQ(logs[0]->count_if([&, rank = rank, pid = pid](const std::string& line) {
      return line.rfind(
                 "lifeboat-launch: rank " + std::to_string(rank) + " (pid " + std::to_string(pid),
                 0) == 0 &&
             line.find("exited with code 3") != std::string::npos;
    }),
              1)
        << job.text();
  std::printf("every worker reported the cut %lld ms after it\n",
              static_cast<long long>(reported_after.count()));
}

TEST(multi_node_partition_test,
     a_launcher_killed_outright_takes_its_workers_and_the_rest_name_them) {
  network_namespaces net{nodes};
  if (!net.ok())
    GTEST_SKIP() << "cannot create network namespaces with " << ip_command << " (needs root)";
  scratch_dir dir{"multi-node-killed-netns"};
  netns_job job;
  for (int k = 0; k < nodes; ++k)
    job.start(
        netns_launcher(net, k, nodes, per_node, {},
                       endless_demo_command(lifeboat::test::built(LIFEBOAT_DEMO), dir / "ckpt")),
        token);
  auto& logs = job.logs;
  ASSERT_TRUE(logs[0]->read_until_count(" joined (generation 0)", workers)) << job.text();
  ASSERT_TRUE(logs[1]->read_until_count("lifeboat-launch: rank=", per_node)) << job.text();
  auto node_1_workers = logs[1]->pids(0);
  job.launchers[1]->kill(SIGKILL);
  for (auto [rank, pid] : node_1_workers)
    EXPECT_TRUE(gone_within(pid, workers_gone_deadline))
        << "rank " << rank << " (pid " << pid << ") outlived its launcher";
  for (int k : {0, 2}) {
    logs[k]->read_all();
    EXPECT_EQ(exit_code(*job.launchers[k]), failure_exit_code) << job.text();
    EXPECT_EQ(errors_naming(*logs[k], {"rank 2", "rank 3"}), per_node) << job.text();
  }
  EXPECT_TRUE(
      logs[0]->contains("lifeboat-launch: giving up: node 1's launcher was lost (rank 2, rank 3)"))
      << job.text();
}

}  // namespace
