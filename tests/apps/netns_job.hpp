#pragma once

// A multi-node lifeboat job whose launchers each run in a network namespace
// of their own (tests/support/network_namespaces.hpp): one lifeboat-launch
// per host, node k in host k, node 0's launcher hosting the coordination
// service on host 0's address. What the netns tests share.

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "checkpoint/layout.hpp"
#include "tests/apps/app_test_support.hpp"
#include "tests/support/build_tree.hpp"
#include "tests/support/network_namespaces.hpp"

namespace lifeboat::test {

// Fresh namespaces: nothing else listens there.
constexpr const char* netns_service_port = "29400";
constexpr const char* netns_control_port = "29402";

/// The environment of every launcher of the job: `token` as its cluster token.
inline std::vector<std::string> netns_job_env(const std::string& token) {
  return environment_with({{"LIFEBOAT_PLATFORM", "generic"}, {"LIFEBOAT_CLUSTER_TOKEN", token}});
}

/// The launcher of node `k` of `nodes`, `per_node` workers, in host k:
/// `flags` go before "--", `command` after.
inline std::vector<std::string> netns_launcher(const network_namespaces& net, int k, int nodes,
                                               int per_node, const std::vector<std::string>& flags,
                                               const std::vector<std::string>& command) {
  return net.launcher(lifeboat::test::built(LIFEBOAT_LAUNCH), k, nodes, per_node,
                      netns_service_port, netns_control_port, flags, command);
}

/// The launchers of one job and their logs, started together.
struct netns_job {
  std::vector<std::unique_ptr<child_process>> launchers;
  std::vector<std::unique_ptr<output_log>> logs;

  void start(const std::vector<std::string>& argv, const std::string& token) {
    launchers.push_back(std::make_unique<child_process>(argv, true, netns_job_env(token)));
    logs.push_back(std::make_unique<output_log>(*launchers.back()));
  }

  /// Every launcher's output so far, for failure messages.
  std::string text() const {
    std::string out;
    for (size_t k = 0; k < logs.size(); ++k)
      out += "node " + std::to_string(k) + ":\n" + logs[k]->text();
    return out;
  }
};

/// The steps whose checkpoint is committed (its manifest written) under `dir`.
inline std::set<int64_t> committed_steps(const std::filesystem::path& dir) {
  std::set<int64_t> out;
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ignored))
    if (auto step = checkpoint::parse_step_dir_name(entry.path().filename().string()))
      if (std::filesystem::exists(entry.path() / checkpoint::manifest_file_name)) out.insert(*step);
  return out;
}

}  // namespace lifeboat::test
