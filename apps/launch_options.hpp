#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "platform/environment.hpp"

namespace lifeboat::apps {

/// The coordination service's PORT + this is where trainers put their own
/// rendezvous (torch's store: the workers' MASTER_PORT), so the launchers'
/// control port defaults to the one after it.
constexpr int trainer_port_offset = 1;

/// lifeboat-launch's command line (DESIGN "lifeboat-launch" and "Multi-node
/// lifeboat-launch").
struct launch_options {
  int nproc = 1;
  int nnodes = 1;
  int node_rank = 0;
  int max_restarts = 0;
  int restart_code = 42;
  /// Where the coordination service listens: --coordinator HOST:PORT, else
  /// 127.0.0.1 and --port (0: any free port).
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  /// Where node 0's launcher listens for the other launchers (multi-node only).
  uint16_t control_port = 0;
  std::optional<uint16_t> status_port_base;
  /// --tls: TLS 1.3 on the coordination connections even on one node
  /// (LIFEBOAT_TLS; multi-node jobs have it by default).
  bool tls = false;
  std::vector<std::string> command;

  int world_size() const { return nnodes * nproc; }
  bool multi_node() const { return nnodes > 1; }
};

/// What parse_launch_options came to: options, or the exit code with which to
/// end at once (0 after --help, 2 after a usage error, which it has reported).
struct parsed_launch_options {
  std::optional<launch_options> options;
  int exit_code = 0;
};

/// Parses argv; prints the usage on stdout for --help, and the error with the
/// usage on stderr for a usage error. LIFEBOAT_RESTART_CODE in `env` is the
/// restart code unless --restart-code gives one (malformed: a usage error).
parsed_launch_options parse_launch_options(int argc, char** argv,
                                           const env_lookup& env = process_environment());

}  // namespace lifeboat::apps
