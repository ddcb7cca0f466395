// Three lifeboat-launch processes, each in a network namespace of its own
// (10.77.0.1-3/24 on veth pairs joined by a bridge in a fourth namespace), so
// the launchers and workers reach one another only over that network, as on
// three machines. Skipped where namespaces cannot be created (not root, no
// CAP_NET_ADMIN); everything is removed afterwards, and no packet leaves the
// namespaces.

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/apps/app_test_support.hpp"

namespace {

using namespace lifeboat::test;

constexpr int nodes = 3;
constexpr int per_node = 1;
constexpr int64_t steps = 300;
// Fresh namespaces: nothing else listens there.
constexpr const char* service_port = "29400";
constexpr const char* control_port = "29402";
// child_process runs a path, not a name looked up in PATH.
constexpr const char* ip_command = "/usr/sbin/ip";

bool run(const std::string& command) {
  return std::system((command + " 2>/dev/null").c_str()) == 0;
}

// The namespaces of one test: created in the constructor, removed (with
// the veths and the bridge inside them) in the destructor.
class namespaces {
 public:
  namespaces() : prefix_("lb" + std::to_string(::getpid() % 100000)) {
    ok_ = run("ip netns add " + bridge());
    ok_ = ok_ && run("ip -n " + bridge() + " link add br0 type bridge") &&
          run("ip -n " + bridge() + " link set br0 up");
    for (int k = 0; ok_ && k < nodes; ++k) {
      auto v = prefix_ + "v" + std::to_string(k);
      ok_ = run("ip netns add " + node(k)) &&
            run("ip -n " + node(k) + " link add eth0 type veth peer name " + v + " netns " +
                bridge()) &&
            run("ip -n " + node(k) + " addr add " + address(k) + "/24 dev eth0") &&
            run("ip -n " + node(k) + " link set eth0 up") &&
            run("ip -n " + node(k) + " link set lo up") &&
            run("ip -n " + bridge() + " link set " + v + " master br0") &&
            run("ip -n " + bridge() + " link set " + v + " up");
    }
  }
  ~namespaces() {
    for (int k = 0; k < nodes; ++k) run("ip netns del " + node(k));
    run("ip netns del " + bridge());
  }
  namespaces(const namespaces&) = delete;
  namespaces& operator=(const namespaces&) = delete;

  bool ok() const { return ok_; }
  std::string node(int k) const { return prefix_ + "n" + std::to_string(k); }
  static std::string address(int k) { return "10.77.0." + std::to_string(k + 1); }

 private:
  std::string bridge() const { return prefix_ + "br"; }
  std::string prefix_;
  bool ok_ = false;
};

std::map<std::string, std::string> job_env() {
  return {{"LIFEBOAT_PLATFORM", "generic"}, {"LIFEBOAT_CLUSTER_TOKEN", "multi-node-netns-test"}};
}

std::vector<std::string> demo(const std::string& ckpt) {
  return {LIFEBOAT_DEMO, "--checkpoint-dir", ckpt, "--steps", std::to_string(steps), "--state-mb",
          "1",           "--step-ms",        "5"};
}

TEST(multi_node_netns_test, sigterm_on_node_2_restarts_three_namespaced_nodes_alike) {
  namespaces net;
  if (!net.ok() || ::access(ip_command, X_OK) != 0)
    GTEST_SKIP() << "cannot create network namespaces with " << ip_command << " (needs root)";
  scratch_dir dir{"multi-node-netns"};
  std::vector<std::string> ref_argv{LIFEBOAT_LAUNCH, "--nproc", std::to_string(nodes * per_node),
                                    "--"};
  for (auto& a : demo(dir / "reference")) ref_argv.push_back(a);
  child_process reference{ref_argv, true, environment_with(job_env())};
  output_log ref{reference};
  ref.read_all();
  ASSERT_EQ(exit_code(reference), 0) << ref.text();
  auto expected = ref.digests(steps);

  std::vector<std::unique_ptr<child_process>> launchers;
  std::vector<std::unique_ptr<output_log>> logs;
  for (int k = 0; k < nodes; ++k) {
    std::vector<std::string> argv{ip_command,
                                  "netns",
                                  "exec",
                                  net.node(k),
                                  LIFEBOAT_LAUNCH,
                                  "--nnodes",
                                  std::to_string(nodes),
                                  "--node-rank",
                                  std::to_string(k),
                                  "--coordinator",
                                  namespaces::address(0) + ":" + service_port,
                                  "--control-port",
                                  control_port,
                                  "--nproc",
                                  std::to_string(per_node),
                                  "--"};
    for (auto& a : demo(dir / "ckpt")) argv.push_back(a);
    launchers.push_back(std::make_unique<child_process>(argv, true, environment_with(job_env())));
    logs.push_back(std::make_unique<output_log>(*launchers.back()));
  }
  auto text = [&] {
    std::string out;
    for (int k = 0; k < nodes; ++k) out += "node " + std::to_string(k) + ":\n" + logs[k]->text();
    return out;
  };
  ASSERT_TRUE(logs[0]->read_until_count(" joined (generation 0)", nodes * per_node)) << text();
  ASSERT_TRUE(logs[2]->read_until("lifeboat-launch: rank=2 ")) << text();
  ::kill(logs[2]->pids(0).at(2), SIGTERM);
  std::vector<long long> agreed;
  std::map<int, std::string> digests;
  for (int k = 0; k < nodes; ++k) {
    logs[k]->read_all();
    EXPECT_EQ(exit_code(*launchers[k]), 0) << text();
    EXPECT_EQ(logs[k]->pids(1).size(), static_cast<size_t>(per_node)) << text();
    for (auto step : logs[k]->agreed_steps()) agreed.push_back(step);
    for (auto& [rank, digest] : logs[k]->digests(steps)) digests[rank] = digest;
  }
  EXPECT_EQ(agreed.size(), static_cast<size_t>(nodes * per_node)) << text();
  EXPECT_EQ(std::set<long long>(agreed.begin(), agreed.end()).size(), 1u) << text();
  EXPECT_EQ(digests, expected) << text();
}

}  // namespace
