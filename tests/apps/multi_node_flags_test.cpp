// Multi-node lifeboat-launch (DESIGN "Multi-node lifeboat-launch") with a
// shell as the worker command: the ranks and environment each node's workers
// get, the launchers' wait for one another, the token they must hold, --help.

#include <map>
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
constexpr int usage_exit_code = 2;
const std::string token = "multi-node-flags-test-token";
// Each worker prints the variables the launcher set for it, then exits 0.
const std::string print_env =
    "echo \"worker rank=$LIFEBOAT_RANK world=$LIFEBOAT_WORLD_SIZE local=$LIFEBOAT_LOCAL_RANK "
    "local_world=$LIFEBOAT_LOCAL_WORLD_SIZE node=$LIFEBOAT_NODE_RANK "
    "coordinator=$LIFEBOAT_COORDINATOR external=$LIFEBOAT_COORDINATOR_EXTERNAL "
    "restart=$LIFEBOAT_RESTART_COUNT\"";

// The service's port and the launchers' control port, free on 127.0.0.1
// (::1 with AF_INET6), and the coordinator's address as --coordinator names it.
struct job_ports {
  explicit job_ports(int family = AF_INET)
      : service(std::to_string(unused_port(family))),
        control(std::to_string(unused_port(family))),
        host(family == AF_INET6 ? "[::1]" : "127.0.0.1") {}

  std::string service;
  std::string control;
  std::string host;
};

std::unique_ptr<child_process> node(const job_ports& ports, int rank,
                                    const std::string& job_token = token, int nnodes = nodes,
                                    const std::string& script = print_env,
                                    std::map<std::string, std::string> env = {}) {
  auto argv = node_launch_args(lifeboat::test::built(LIFEBOAT_LAUNCH), nnodes, rank,
                               ports.host + ":" + ports.service, ports.control, per_node);
  argv.insert(argv.end(), {"--", "/bin/sh", "-c", script});
  env["LIFEBOAT_CLUSTER_TOKEN"] = job_token;
  return std::make_unique<child_process>(argv, true, environment_with(env));
}

// Runs both nodes' launchers with `script` as the workers' command until they
// end; each exits 0. Their output, node 0's first.
std::vector<std::string> both_nodes_finish(const job_ports& ports, const std::string& script,
                                           const std::map<std::string, std::string>& env = {}) {
  auto zero = node(ports, 0, token, nodes, script, env);
  auto one = node(ports, 1, token, nodes, script, env);
  output_log log0{*zero};
  output_log log1{*one};
  log0.read_all();
  log1.read_all();
  EXPECT_EQ(exit_code(*zero), 0) << log0.text();
  EXPECT_EQ(exit_code(*one), 0) << log1.text();
  return {log0.text(), log1.text()};
}

bool holds(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// `launcher`, still waiting for the other launchers, takes a SIGTERM: it
// exits with the restart code, as workers stopped before they saved do, and
// says that no worker started.
void expect_a_sigterm_ends_the_wait(child_process& launcher, output_log& log) {
  launcher.kill(SIGTERM);
  log.read_all();
  EXPECT_EQ(exit_code(launcher), 42) << log.text();
  EXPECT_TRUE(
      log.contains("lifeboat-launch: stopped by SIGTERM while waiting for the other "
                   "launchers: no worker started"))
      << log.text();
}

TEST(multi_node_flags_test, node_k_runs_global_ranks_k_times_n_on_with_their_local_ranks) {
  job_ports ports;
  auto logs = both_nodes_finish(ports, print_env);
  for (int k = 0; k < nodes; ++k) {
    auto& log = logs[static_cast<size_t>(k)];
    for (int local = 0; local < per_node; ++local) {
      auto rank = std::to_string(k * per_node + local);
      EXPECT_TRUE(holds(log, "lifeboat-launch: rank=" + rank + " pid=")) << log;
      EXPECT_TRUE(holds(log, "worker rank=" + rank + " world=4 local=" + std::to_string(local) +
                                 " local_world=2 node=" + std::to_string(k) +
                                 " coordinator=127.0.0.1:" + ports.service +
                                 " external=1 restart=0"))
          << log;
    }
    EXPECT_TRUE(holds(log, "lifeboat-launch: all 4 workers finished")) << log;
  }
}

// The same as torchrun names them, for trainers written for it: torch's
// env:// rendezvous (init_process_group's default) reads RANK, WORLD_SIZE,
// MASTER_ADDR and MASTER_PORT, at node 0 beside the coordination service;
// before, it raised "environment variable RANK expected, but not set". A
// MASTER_PORT the launchers were given is kept.
TEST(multi_node_flags_test,
     workers_get_torchruns_variables_with_the_rendezvous_beside_the_service) {
  const std::string print_torch_env =
      "echo \"torch rank=$RANK world=$WORLD_SIZE local=$LOCAL_RANK local_world=$LOCAL_WORLD_SIZE "
      "group=$GROUP_RANK master=$MASTER_ADDR:$MASTER_PORT\"";
  for (std::string given_port : {"", "29123"}) {
    job_ports ports;
    // Blank (unset, to lifeboat) unless given: the test's own environment
    // may hold torch's variables.
    auto logs = both_nodes_finish(ports, print_torch_env,
                                  {{"MASTER_ADDR", ""}, {"MASTER_PORT", given_port}});
    auto master_port =
        given_port.empty() ? std::to_string(std::stoi(ports.service) + 1) : given_port;
    for (int k = 0; k < nodes; ++k) {
      auto& log = logs[static_cast<size_t>(k)];
      for (int local = 0; local < per_node; ++local)
        EXPECT_TRUE(holds(log, "torch rank=" + std::to_string(k * per_node + local) +
                                   " world=4 local=" + std::to_string(local) +
                                   " local_world=2 group=" + std::to_string(k) +
                                   " master=127.0.0.1:" + master_port))
            << log;
    }
  }
}

// An IPv6 coordinator in brackets, as LIFEBOAT_COORDINATOR takes it: the
// launchers link over IPv6 and each worker gets the address as it was given.
TEST(multi_node_flags_test, an_ipv6_coordinator_links_the_launchers_and_reaches_the_workers) {
  job_ports ports{AF_INET6};
  if (ports.service == "0" || ports.control == "0") GTEST_SKIP() << "no IPv6 loopback (::1) here";
  auto zero = node(ports, 0);
  output_log log0{*zero};
  ASSERT_TRUE(
      log0.read_until("waiting for the launchers of 1 other node(s) on [::1]:" + ports.control))
      << log0.text();
  auto one = node(ports, 1);
  output_log log1{*one};
  log0.read_all();
  log1.read_all();
  EXPECT_EQ(exit_code(*zero), 0) << log0.text();
  EXPECT_EQ(exit_code(*one), 0) << log1.text();
  for (auto* log : {&log0, &log1}) {
    EXPECT_EQ(log->count("coordinator=[::1]:" + ports.service + " external=1"), per_node)
        << log->text();
    EXPECT_TRUE(log->contains("lifeboat-launch: all 4 workers finished")) << log->text();
  }
}

// Workers that exit with the restart code though none recorded a notice
// back off on every node alike: node 0 decides, waits with its links kept
// alive, and its lines reach node 1; a SIGTERM to node 0 during the wait
// ends the job on both with the restart code.
TEST(multi_node_flags_test, restart_code_exits_without_a_notice_back_off_on_every_node) {
  job_ports ports;
  auto zero = node(ports, 0, token, nodes, "exit 42");
  auto one = node(ports, 1, token, nodes, "exit 42");
  output_log log0{*zero};
  output_log log1{*one};
  const std::string waiting = "lifeboat-launch: waiting 2 s before the next start: 7 generations";
  ASSERT_TRUE(log0.read_until(waiting)) << log0.text();
  zero->kill(SIGTERM);
  log0.read_all();
  log1.read_all();
  EXPECT_EQ(exit_code(*zero), 42) << log0.text();
  EXPECT_EQ(exit_code(*one), 42) << log1.text();
  EXPECT_TRUE(log0.contains(
      "lifeboat-launch: stopped by SIGTERM while waiting for the next start: no worker is running"))
      << log0.text();
  EXPECT_TRUE(log1.contains(waiting)) << log1.text();
  EXPECT_EQ(log1.count("lifeboat-launch: rank="), 7 * per_node) << log1.text();
  EXPECT_FALSE(log1.contains("lost")) << log1.text();
}

// Workers on node 1 that ignore the SIGTERM its launcher forwarded, and
// record no notice, are killed once unheeded_signal_bound (30 s) passed:
// node 0, which alone knows that no worker of the job recorded one, tells
// node 1 to. Before, only node 0 checked, for a signal it forwarded itself,
// and node 1's launcher waited for its workers for ever. Node 0's workers
// then follow their failure (killed at the failed generation's bound); the
// job ends with the restart code, nothing saved.
TEST(multi_node_flags_test, workers_that_ignore_a_sigterm_on_node_1_are_killed_after_30_s) {
  job_ports ports;
  const std::string ignoring = "trap '' TERM; echo ignoring SIGTERM; exec sleep 600";
  auto zero = node(ports, 0, token, nodes, ignoring);
  auto one = node(ports, 1, token, nodes, ignoring);
  output_log log0{*zero};
  output_log log1{*one};
  ASSERT_TRUE(log1.read_until_count("ignoring SIGTERM", per_node)) << log1.text();
  one->kill(SIGTERM);
  ASSERT_TRUE(log1.read_until("SIGTERM received; forwarding to every worker")) << log1.text();
  // The unheeded bound, then the failed generation's bound for node 0's.
  constexpr auto past_both_bounds = std::chrono::seconds{150};
  log0.read_all(past_both_bounds);
  log1.read_all(past_both_bounds);
  EXPECT_EQ(exit_code(*zero, past_both_bounds), 42) << log0.text();
  EXPECT_EQ(exit_code(*one, past_both_bounds), 42) << log1.text();
  const std::string killing =
      "lifeboat-launch: SIGTERM was forwarded on node 1 30 s ago and no worker took it as a "
      "notice or exited (do they ignore it, without a lifeboat handler?): killing node 1's "
      "workers";
  EXPECT_TRUE(log0.contains(killing)) << log0.text();
  EXPECT_TRUE(log1.contains(killing)) << log1.text();
  auto killed = log0.count_if([](const std::string& line) {
    return line.rfind("lifeboat-launch: rank ", 0) == 0 &&
           line.find(") outlived the signal it was sent and was killed") != std::string::npos;
  });
  EXPECT_EQ(killed, per_node) << log0.text();
}

// Launchers start in any order: node 1's waits for node 0's, and says so.
TEST(multi_node_flags_test, a_launcher_started_before_node_zero_waits_for_it) {
  job_ports ports;
  auto one = node(ports, 1);
  output_log log1{*one};
  ASSERT_TRUE(log1.read_until("lifeboat-launch: waiting for node 0's launcher at 127.0.0.1:" +
                              ports.control))
      << log1.text();
  auto zero = node(ports, 0);
  output_log log0{*zero};
  log0.read_all();
  log1.read_all();
  EXPECT_EQ(exit_code(*zero), 0) << log0.text();
  EXPECT_EQ(exit_code(*one), 0) << log1.text();
  EXPECT_EQ(log1.count("worker rank="), per_node) << log1.text();
}

// A SIGTERM or SIGINT while the launchers wait for one another ends the wait
// at once (it is bounded by 120 s otherwise): a SIGTERM with the restart
// code, as for workers stopped before they saved; a SIGINT with 3.
TEST(multi_node_flags_test, a_signal_ends_the_wait_for_the_other_launchers) {
  job_ports ports;
  auto zero = node(ports, 0);
  output_log log0{*zero};
  ASSERT_TRUE(log0.read_until("waiting for the launchers of 1 other node(s)")) << log0.text();
  expect_a_sigterm_ends_the_wait(*zero, log0);
  auto one = node(ports, 1);
  output_log log1{*one};
  ASSERT_TRUE(log1.read_until("waiting for node 0's launcher at 127.0.0.1:" + ports.control))
      << log1.text();
  one->kill(SIGINT);
  log1.read_all();
  EXPECT_EQ(exit_code(*one), failure_exit_code) << log1.text();
  EXPECT_TRUE(log1.contains("stopped by SIGINT while waiting for the other launchers"))
      << log1.text();
  EXPECT_FALSE(log1.contains("worker rank=")) << log1.text();
}

// A launcher that joined node 0's, which still waits for a third node, ends
// on a SIGTERM too (no worker to forward it to), and node 0 keeps its place
// open for that node's launcher.
TEST(multi_node_flags_test, a_joined_launcher_ends_on_a_signal_before_the_start) {
  constexpr int three_nodes = 3;
  job_ports ports;
  auto zero = node(ports, 0, token, three_nodes);
  output_log log0{*zero};
  ASSERT_TRUE(log0.read_until("waiting for the launchers of 2 other node(s)")) << log0.text();
  auto one = node(ports, 1, token, three_nodes);
  output_log log1{*one};
  ASSERT_TRUE(log0.read_until("node 1's launcher joined (1 of 2)")) << log0.text();
  expect_a_sigterm_ends_the_wait(*one, log1);
  ASSERT_TRUE(log0.read_until("node 1's launcher left before the start")) << log0.text();
  expect_a_sigterm_ends_the_wait(*zero, log0);
}

TEST(multi_node_flags_test, a_multi_node_launcher_without_the_token_exits_2) {
  job_ports ports;
  auto zero = node(ports, 0, "");
  output_log log{*zero};
  log.read_all();
  EXPECT_EQ(exit_code(*zero), usage_exit_code) << log.text();
  EXPECT_TRUE(log.contains("lifeboat-launch: LIFEBOAT_CLUSTER_TOKEN is not set")) << log.text();
  EXPECT_FALSE(log.contains("worker rank=")) << log.text();
}

// A launcher holding another token is refused by node 0's and starts no worker.
TEST(multi_node_flags_test, a_launcher_with_another_token_is_refused) {
  job_ports ports;
  auto zero = node(ports, 0);
  output_log log0{*zero};
  ASSERT_TRUE(log0.read_until("waiting for the launchers of 1 other node(s)")) << log0.text();
  auto stranger = node(ports, 1, "another-token");
  output_log log1{*stranger};
  log1.read_all();
  EXPECT_EQ(exit_code(*stranger), failure_exit_code) << log1.text();
  // With TLS (a multi-node job's default), the key made of another token
  // fails the handshake; without, node 0 checks the token's proof.
  EXPECT_TRUE(log1.contains("refused this launcher: ")) << log1.text();
  EXPECT_TRUE(log1.contains("LIFEBOAT_CLUSTER_TOKEN")) << log1.text();
  EXPECT_FALSE(log1.contains("worker rank=")) << log1.text();
  zero->kill(SIGKILL);
}

TEST(multi_node_flags_test, help_prints_the_usage_and_exits_0) {
  child_process run{{lifeboat::test::built(LIFEBOAT_LAUNCH), "--help"}, true};
  output_log log{run};
  log.read_all();
  EXPECT_EQ(exit_code(run), 0) << log.text();
  EXPECT_TRUE(log.contains("usage: lifeboat-launch --nproc N")) << log.text();
  EXPECT_TRUE(log.contains("--nnodes M --node-rank K --coordinator HOST:PORT")) << log.text();
}

}  // namespace
