#pragma once

// The arguments of lifeboat-launch for one node of a multi-node job, shared
// by the tests on loopback and those in network namespaces.

#include <string>
#include <vector>

namespace lifeboat::test {

/// lifeboat-launch (the binary `launch`) as node `node_rank` of `nodes`, with
/// `per_node` workers, node 0's service at `coordinator` ("host:port"), its
/// launcher at `control_port`. The caller appends its flags, "--" and the
/// worker's command.
inline std::vector<std::string> node_launch_args(const std::string& launch, int nodes,
                                                 int node_rank, const std::string& coordinator,
                                                 const std::string& control_port, int per_node) {
  return {launch,
          "--nnodes",
          std::to_string(nodes),
          "--node-rank",
          std::to_string(node_rank),
          "--coordinator",
          coordinator,
          "--control-port",
          control_port,
          "--nproc",
          std::to_string(per_node)};
}

}  // namespace lifeboat::test
