#include "apps/launch_options.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "apps/flags.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"

namespace lifeboat::apps {

namespace {

constexpr int usage_exit_code = 2;
constexpr int max_nodes = 4096;
constexpr int max_nproc = 4096;
// Beside the coordination service's PORT: PORT + 1 is where trainers put
// their own rendezvous (the torch example's gloo), so the launchers take PORT + 2.
constexpr int default_control_port_offset = 2;

constexpr const char* usage =
    "usage: lifeboat-launch --nproc N [--max-restarts R] [--restart-code C] [--port P]\n"
    "                       [--status-port BASE] -- CMD ARGS...\n"
    "       lifeboat-launch --nnodes M --node-rank K --coordinator HOST:PORT --nproc N\n"
    "                       [--control-port P] [--max-restarts R] [--restart-code C]\n"
    "                       [--status-port BASE] -- CMD ARGS...\n"
    "Starts N workers (global ranks K*N .. K*N+N-1 of M*N), hosts their coordination\n"
    "service (node 0, on HOST:PORT), restarts them after a save with the restart code\n"
    "(default 42) and after at most R failures. A multi-node launcher needs\n"
    "LIFEBOAT_CLUSTER_TOKEN (the same on every node); node 0's launcher listens for the\n"
    "others on HOST:CONTROL_PORT (default PORT + 2).\n";

std::optional<launch_options> usage_error(const std::string& error) {
  write_stderr_line("lifeboat-launch: " + error);
  return std::nullopt;
}

// HOST:PORT of --coordinator; the port must be one the other nodes can name.
bool parse_coordinator(const std::string& text, launch_options& out, std::string& error) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    error = "--coordinator expects HOST:PORT, got '" + text + "'";
    return false;
  }
  char* end = nullptr;
  auto port = std::strtol(text.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port < 1 || port > 65535) {
    error = "--coordinator expects a port in [1, 65535], got '" + text + "'";
    return false;
  }
  out.host = text.substr(0, colon);
  out.port = static_cast<uint16_t>(port);
  return true;
}

std::optional<launch_options> parse(int argc, char** argv) {
  std::string error;
  auto f = flags::parse(argc, argv,
                        {"nproc", "nnodes", "node-rank", "coordinator", "control-port",
                         "max-restarts", "restart-code", "port", "status-port"},
                        error);
  if (!f) return usage_error(error);
  // DESIGN's usage has no default worker count: a forgotten --nproc must not
  // quietly start a job of one.
  if (!f->has("nproc")) return usage_error("--nproc N is required (how many workers to start)");
  launch_options out;
  auto nproc = f->integer("nproc", 1, 1, max_nproc, error);
  auto nnodes = nproc ? f->integer("nnodes", 1, 1, max_nodes, error) : std::nullopt;
  auto node_rank = nnodes ? f->integer("node-rank", 0, 0, *nnodes - 1, error) : std::nullopt;
  auto max_restarts = node_rank ? f->integer("max-restarts", 0, 0, 1'000'000, error) : std::nullopt;
  auto code = max_restarts
                  ? f->integer("restart-code", default_restart_code, 1, max_exit_code, error)
                  : std::nullopt;
  auto port = code ? f->integer("port", 0, 0, 65535, error) : std::nullopt;
  // -1: no status endpoints. Every rank's port BASE + r and the launcher's
  // BASE + nproc must be ports.
  auto status_base = port ? f->integer("status-port", -1, 0, 65535, error) : std::nullopt;
  if (status_base && *status_base > 0 && *status_base + *nproc > 65535) {
    error = "--status-port " + std::to_string(*status_base) + " runs past port 65535 (rank r gets" +
            " BASE + r, the launcher BASE + nproc)";
    status_base.reset();
  }
  if (!status_base) return usage_error(error);
  if (f->rest().empty()) return usage_error("no worker command after '--'");
  if (!is_restart_code(*code))
    return usage_error("--restart-code must differ from the failure code 3");
  out.nproc = static_cast<int>(*nproc);
  out.nnodes = static_cast<int>(*nnodes);
  out.node_rank = static_cast<int>(*node_rank);
  out.max_restarts = static_cast<int>(*max_restarts);
  out.restart_code = static_cast<int>(*code);
  out.port = static_cast<uint16_t>(*port);
  if (*status_base >= 0) out.status_port_base = static_cast<uint16_t>(*status_base);
  out.command = f->rest();
  if (f->has("coordinator")) {
    if (f->has("port")) return usage_error("--port and --coordinator both name the service's port");
    if (!parse_coordinator(f->text("coordinator"), out, error)) return usage_error(error);
  } else if (out.multi_node()) {
    return usage_error("--nnodes " + std::to_string(out.nnodes) +
                       " needs --coordinator HOST:PORT (where node 0 hosts the service)");
  }
  if (!out.multi_node()) return out;
  auto fallback = out.port + default_control_port_offset;
  auto control = f->integer("control-port", fallback > 65535 ? -1 : fallback, 1, 65535, error);
  if (!control) return usage_error(error);
  if (*control < 0)
    return usage_error("--coordinator port leaves no room for PORT + 2: give --control-port");
  if (*control == out.port)
    return usage_error("--control-port must differ from the coordinator's port");
  out.control_port = static_cast<uint16_t>(*control);
  return out;
}

}  // namespace

parsed_launch_options parse_launch_options(int argc, char** argv) {
  if (apps::flags::asks_for_help(argc, argv)) {
    std::fputs(usage, stdout);
    return {std::nullopt, 0};
  }
  auto options = parse(argc, argv);
  if (!options) {
    std::cerr << usage;
    return {std::nullopt, usage_exit_code};
  }
  return {std::move(options), 0};
}

}  // namespace lifeboat::apps
