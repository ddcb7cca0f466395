// Three lifeboat-launch processes, each in a network namespace of its own
// (tests/support/network_namespaces.hpp), so the launchers and workers reach
// one another only over that network, as on three machines: a SIGTERM to a
// worker on host 2 restarts every host's workers alike, with TLS 1.3 on the
// coordination connections, the default of a job across hosts, and every
// rank's checkpoint replicated to another host's peer tier. Skipped where
// namespaces cannot be created (not root, no CAP_NET_ADMIN). The cut link,
// the killed launcher and the stranger are in multi_node_partition_test.

#include <signal.h>

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/apps/netns_job.hpp"
#include "tests/support/build_tree.hpp"

namespace {

using namespace lifeboat::test;

constexpr int nodes = 3;
constexpr int per_node = 1;
constexpr int64_t steps = 300;
constexpr const char* token = "multi-node-netns-test";

std::vector<std::string> demo(const std::string& ckpt) {
  return demo_command(lifeboat::test::built(LIFEBOAT_DEMO), ckpt, steps, 5);
}

TEST(multi_node_netns_test, sigterm_on_node_2_restarts_three_namespaced_nodes_alike) {
  network_namespaces net{nodes};
  if (!net.ok())
    GTEST_SKIP() << "cannot create network namespaces with " << ip_command << " (needs root)";
  scratch_dir dir{"multi-node-netns"};
  std::vector<std::string> ref_argv{lifeboat::test::built(LIFEBOAT_LAUNCH), "--nproc",
                                    std::to_string(nodes * per_node), "--"};
  for (auto& a : demo(dir / "reference")) ref_argv.push_back(a);
  child_process reference{ref_argv, true, netns_job_env(token)};
  output_log ref{reference};
  ref.read_all();
  ASSERT_EQ(exit_code(reference), 0) << ref.text();
  auto expected = ref.digests(steps);

  netns_job job;
  for (int k = 0; k < nodes; ++k)
    job.start(netns_launcher(net, k, nodes, per_node, {}, demo(dir / "ckpt")), token);
  auto& logs = job.logs;
  ASSERT_TRUE(logs[0]->read_until_count(" joined (generation 0)", nodes * per_node)) << job.text();
  ASSERT_TRUE(logs[2]->read_until("lifeboat-launch: rank=2 ")) << job.text();
  ::kill(logs[2]->pids(0).at(2), SIGTERM);
  std::vector<long long> agreed;
  std::map<int, std::string> digests;
  int replicated = 0;
  int encrypted_peers = 0;
  for (int k = 0; k < nodes; ++k) {
    logs[k]->read_all();
    replicated += logs[k]->count("), peer (");
    encrypted_peers += logs[k]->count("keeps this rank's replicas (TLS 1.3)");
    EXPECT_EQ(exit_code(*job.launchers[k]), 0) << job.text();
    EXPECT_EQ(logs[k]->pids(1).size(), static_cast<size_t>(per_node)) << job.text();
    for (auto step : logs[k]->agreed_steps()) agreed.push_back(step);
    for (auto& [rank, digest] : logs[k]->digests(steps)) digests[rank] = digest;
  }
  EXPECT_EQ(agreed.size(), static_cast<size_t>(nodes * per_node)) << job.text();
  EXPECT_EQ(std::set<long long>(agreed.begin(), agreed.end()).size(), 1u) << job.text();
  EXPECT_EQ(digests, expected) << job.text();
  EXPECT_GE(logs[0]->count("TLS 1.3 on every connection"), 1) << job.text();
  // Every rank's preemption checkpoint has a replica on another node, sent
  // over TLS in both generations.
  EXPECT_EQ(replicated, nodes * per_node) << job.text();
  EXPECT_EQ(encrypted_peers, 2 * nodes * per_node) << job.text();
}

}  // namespace
