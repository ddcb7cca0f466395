// Two lifeboat-launch processes with --nnodes 2 on 127.0.0.1, each running
// two lifeboat-demo workers (DESIGN "Multi-node lifeboat-launch"): a SIGTERM
// to a worker of node 1 saves all four at one step and restarts both nodes'
// workers with the same restart count, and the digests are those of an
// uninterrupted run; a launcher killed outright takes its workers with it,
// and node 0's workers and launcher exit 3 naming the ranks it ran.

#include <signal.h>

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/apps/app_test_support.hpp"
#include "tests/support/build_tree.hpp"
#include "tests/support/loopback_port.hpp"
#include "tests/support/node_launch.hpp"

namespace {

using namespace lifeboat::test;

constexpr int nodes = 2;
constexpr int per_node = 2;
constexpr int workers = nodes * per_node;
// Long enough (300 steps of 5 ms) that a SIGTERM sent once every worker
// joined lands in training.
constexpr int64_t steps = 300;
// A launcher killed by SIGKILL takes its workers with it (PR_SET_PDEATHSIG):
// they are gone as soon as the kernel delivers the signal.
constexpr auto workers_gone_deadline = 1s;

std::vector<std::string> demo(const std::string& ckpt, int64_t run_steps) {
  return demo_command(lifeboat::test::built(LIFEBOAT_DEMO), ckpt, run_steps, 5);
}

std::map<std::string, std::string> job_env() {
  return {{"LIFEBOAT_PLATFORM", "generic"}, {"LIFEBOAT_CLUSTER_TOKEN", "multi-node-demo-test"}};
}

// The launcher of node `rank` of a two-node job on 127.0.0.1.
std::unique_ptr<child_process> node(const std::string& service_port,
                                    const std::string& control_port, int rank,
                                    const std::vector<std::string>& command) {
  auto argv = node_launch_args(lifeboat::test::built(LIFEBOAT_LAUNCH), nodes, rank,
                               "127.0.0.1:" + service_port, control_port, per_node);
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return std::make_unique<child_process>(argv, true, environment_with(job_env()));
}

// Both launchers of one job, with their logs.
struct two_nodes {
  std::string service_port = std::to_string(unused_port());
  std::string control_port = std::to_string(unused_port());
  std::unique_ptr<child_process> zero;
  std::unique_ptr<child_process> one;
  std::unique_ptr<output_log> log0;
  std::unique_ptr<output_log> log1;

  explicit two_nodes(const std::vector<std::string>& command)
      : zero(node(service_port, control_port, 0, command)),
        one(node(service_port, control_port, 1, command)),
        log0(std::make_unique<output_log>(*zero)),
        log1(std::make_unique<output_log>(*one)) {}

  std::string text() const { return "node 0:\n" + log0->text() + "node 1:\n" + log1->text(); }

  // Whether every worker of the first generation joined and node 1 has
  // started its own. The service runs in node 0's launcher: it logs every join.
  bool all_joined() {
    return log0->read_until_count(" joined (generation 0)", workers) &&
           log1->read_until_count("lifeboat-launch: rank=", per_node);
  }
};

TEST(multi_node_demo_test, sigterm_to_a_worker_on_node_1_restarts_every_node_alike) {
  scratch_dir dir{"multi-node-preempt"};
  // The uninterrupted run: the same four ranks under one launcher.
  std::vector<std::string> ref_argv{lifeboat::test::built(LIFEBOAT_LAUNCH), "--nproc",
                                    std::to_string(workers), "--"};
  for (auto& a : demo(dir / "reference", steps)) ref_argv.push_back(a);
  child_process ref_run{ref_argv, true, environment_with(job_env())};
  output_log ref{ref_run};
  ref.read_all();
  ASSERT_EQ(exit_code(ref_run), 0) << ref.text();
  auto expected = ref.digests(steps);
  ASSERT_EQ(expected.size(), static_cast<size_t>(workers)) << ref.text();

  two_nodes job{demo(dir / "ckpt", steps)};
  ASSERT_TRUE(job.all_joined()) << job.text();
  auto victim = job.log1->pids(0).at(3);
  ::kill(victim, SIGTERM);
  job.log0->read_all();
  job.log1->read_all();
  EXPECT_EQ(exit_code(*job.zero), 0) << job.text();
  EXPECT_EQ(exit_code(*job.one), 0) << job.text();
  // All four saved at one step, and each node restarted its own two workers.
  auto agreed = job.log0->agreed_steps();
  for (auto step : job.log1->agreed_steps()) agreed.push_back(step);
  EXPECT_EQ(agreed.size(), static_cast<size_t>(workers)) << job.text();
  EXPECT_EQ(std::set<long long>(agreed.begin(), agreed.end()).size(), 1u) << job.text();
  EXPECT_EQ(job.log0->pids(1).size(), static_cast<size_t>(per_node)) << job.text();
  EXPECT_EQ(job.log1->pids(1).size(), static_cast<size_t>(per_node)) << job.text();
  EXPECT_EQ(job.log1->pids(1).count(2), 1u) << job.text();
  // Both launchers say the same and every rank ends with the reference digest.
  for (auto* log : {job.log0.get(), job.log1.get()})
    EXPECT_TRUE(
        log->contains("lifeboat-launch: workers saved a checkpoint and exited with the "
                      "restart code"))
        << job.text();
  auto digests = job.log0->digests(steps);
  for (auto& [rank, digest] : job.log1->digests(steps)) digests[rank] = digest;
  EXPECT_EQ(digests, expected) << job.text();
}

TEST(multi_node_demo_test, a_launcher_killed_outright_takes_its_workers_and_node_0_names_them) {
  scratch_dir dir{"multi-node-killed"};
  two_nodes job{endless_demo_command(lifeboat::test::built(LIFEBOAT_DEMO), dir / "ckpt")};
  ASSERT_TRUE(job.all_joined()) << job.text();
  auto node_1_workers = job.log1->pids(0);
  job.one->kill(SIGKILL);
  for (auto [rank, pid] : node_1_workers)
    EXPECT_TRUE(gone_within(pid, workers_gone_deadline))
        << "rank " << rank << " (pid " << pid << ") outlived its launcher";
  job.log0->read_all();
  EXPECT_EQ(exit_code(*job.zero), failure_exit_code) << job.text();
  EXPECT_TRUE(
      job.log0->contains("lifeboat-launch: giving up: node 1's launcher was lost (rank 2, rank 3)"))
      << job.text();
  // Node 0's workers learnt of the loss and exited 3 themselves, naming a
  // rank of node 1 in their error.
  for (auto [rank, pid] : job.log0->pids(0))
    EXPECT_TRUE(job.log0->contains("lifeboat-launch: rank " + std::to_string(rank) + " (pid " +
                                   std::to_string(pid) + ") exited with code 3"))
        << job.text();
  auto errors_naming_node_1 = job.log0->count_if([](const std::string& line) {
    return line.rfind("lifeboat-demo: ", 0) == 0 && line.find(" error: ") != std::string::npos &&
           (line.find("rank 2 ") != std::string::npos || line.find("rank 3 ") != std::string::npos);
  });
  EXPECT_EQ(errors_naming_node_1, per_node) << job.text();
}

// A worker of node 1 that stops answering (SIGSTOP: a frozen process) keeps
// its connection open; once the service declares it lost, node 0 tells node
// 1's launcher to kill it, instead of both waiting for it until the failed
// group's deadline (30 s).
TEST(multi_node_demo_test, a_stopped_worker_on_node_1_is_killed_once_declared_lost) {
  scratch_dir dir{"multi-node-stopped"};
  two_nodes job{endless_demo_command(lifeboat::test::built(LIFEBOAT_DEMO), dir / "ckpt")};
  ASSERT_TRUE(job.all_joined()) << job.text();
  auto victim = job.log1->pids(0).at(3);
  ::kill(victim, SIGSTOP);
  job.log0->read_all();
  job.log1->read_all();
  EXPECT_EQ(exit_code(*job.zero), failure_exit_code) << job.text();
  EXPECT_EQ(exit_code(*job.one), failure_exit_code) << job.text();
  for (auto* log : {job.log0.get(), job.log1.get()}) {
    EXPECT_TRUE(log->contains("lifeboat-launch: rank 3 (pid " + std::to_string(victim) +
                              ") was lost and killed"))
        << job.text();
    EXPECT_TRUE(log->contains("lifeboat-launch: giving up: rank 3 was lost: no heartbeat for "))
        << job.text();
    EXPECT_FALSE(log->contains("did not exit in time")) << job.text();
  }
}

}  // namespace
