#include "apps/launch_options.hpp"

#include "apps/command_line.hpp"
#include "messages/errors.hpp"
#include "platform/platform_detection.hpp"
#include "platform/text_parse.hpp"

namespace lifeboat::apps {

namespace {

constexpr int max_nodes = 4096;
constexpr int max_nproc = 4096;
constexpr int max_restarts_limit = 1'000'000;
// Beside the coordination service's PORT and the trainers' rendezvous.
constexpr int default_control_port_offset = trainer_port_offset + 1;

constexpr const char* synopsis =
    "usage: lifeboat-launch --nproc N [--max-restarts R] [--restart-code C] [--port P]\n"
    "                       [--status-port BASE] [--tls] -- CMD ARGS...\n"
    "       lifeboat-launch --nnodes M --node-rank K --coordinator HOST:PORT --nproc N\n"
    "                       [--control-port P] [--max-restarts R] [--restart-code C]\n"
    "                       [--status-port BASE] [--tls] -- CMD ARGS...\n";

constexpr const char* explanation =
    "Starts N workers (global ranks K*N .. K*N+N-1 of M*N), hosts their coordination\n"
    "service (node 0, on HOST:PORT), restarts them after a save with the restart code\n"
    "(default LIFEBOAT_RESTART_CODE, else 42) and after at most R failures. A\n"
    "multi-node launcher needs LIFEBOAT_CLUSTER_TOKEN (the same on every node); node\n"
    "0's launcher listens for the others on HOST:CONTROL_PORT (default PORT + 2). The\n"
    "coordination connections use TLS 1.3 with --tls, LIFEBOAT_TLS=1 or --nnodes > 1\n"
    "(LIFEBOAT_TLS=0 turns it off): certificates from LIFEBOAT_TLS_CERT,\n"
    "LIFEBOAT_TLS_KEY and LIFEBOAT_TLS_CA, else a key derived from\n"
    "LIFEBOAT_CLUSTER_TOKEN.";

// HOST:PORT of --coordinator ([ADDRESS]:PORT for IPv6, as LIFEBOAT_COORDINATOR
// reads it); the port must be one the other nodes can name.
std::optional<std::string> parse_coordinator(const std::string& text, launch_options& out) {
  auto where = parse_endpoint(text, "--coordinator");
  if (!where)
    return "--coordinator expects HOST:PORT with a port in [1, 65535] ([ADDRESS]:PORT for an "
           "IPv6 address), got '" +
           text + "'";
  out.host = where->host;
  out.port = where->port;
  return std::nullopt;
}

// The checks that involve several flags, once each flag is valid alone.
std::optional<std::string> check(launch_options& out, const CLI::App& app, int port,
                                 int status_base, int control_port) {
  // DESIGN's usage has no default worker count: a forgotten --nproc must not
  // quietly start a job of one.
  if (app.count("--nproc") == 0) return "--nproc N is required (how many workers to start)";
  if (out.node_rank >= out.nnodes)
    return "--node-rank expects an integer in [0, " + std::to_string(out.nnodes - 1) + "], got '" +
           std::to_string(out.node_rank) + "'";
  // -1: no status endpoints. Every rank's port BASE + r and the launcher's
  // BASE + nproc must be ports.
  if (status_base > 0 && status_base + out.nproc > 65535)
    return "--status-port " + std::to_string(status_base) +
           " runs past port 65535 (rank r gets BASE + r, the launcher BASE + nproc)";
  if (out.command.empty()) return "no worker command after '--'";
  out.port = static_cast<uint16_t>(port);
  if (status_base >= 0) out.status_port_base = static_cast<uint16_t>(status_base);
  if (app.count("--coordinator") > 0) {
    if (app.count("--port") > 0) return "--port and --coordinator both name the service's port";
    if (auto error = parse_coordinator(app.get_option("--coordinator")->as<std::string>(), out))
      return error;
  } else if (out.multi_node()) {
    return "--nnodes " + std::to_string(out.nnodes) +
           " needs --coordinator HOST:PORT (where node 0 hosts the service)";
  }
  if (!out.multi_node()) return std::nullopt;
  if (app.count("--control-port") == 0) {
    control_port = out.port + default_control_port_offset;
    if (control_port > 65535)
      return "--coordinator port leaves no room for PORT + 2: give --control-port";
  }
  if (control_port == out.port) return "--control-port must differ from the coordinator's port";
  out.control_port = static_cast<uint16_t>(control_port);
  return std::nullopt;
}

}  // namespace

parsed_launch_options parse_launch_options(int argc, char** argv, const env_lookup& env) {
  // Everything after the first lone "--" is the worker command, untouched:
  // CLI11 sees only the launcher's own flags.
  int flags_end = 1;
  while (flags_end < argc && std::string{argv[flags_end]} != "--") ++flags_end;
  launch_options out;
  if (flags_end < argc) out.command.assign(argv + flags_end + 1, argv + argc);
  // The launcher's environment names the job's restart code as a worker's
  // does; --restart-code wins. Before, the launcher set 42 for its workers
  // over it, and exited 42 where the job's outer restart policy waited for it.
  std::optional<std::string> restart_code_error;
  if (auto code = restart_code_variable(env); !code)
    restart_code_error = restart_code_variable_refusal(env_value(env, kRestartCodeVariable));
  else if (*code)
    out.restart_code = **code;

  CLI::App app{"", "lifeboat-launch"};
  configure_app(app, synopsis, explanation);
  add_integer(app, "--nproc", out.nproc, 1, max_nproc, "workers to start on this node (required)")
      ->type_name("N");
  add_integer(app, "--nnodes", out.nnodes, 1, max_nodes, "nodes of the job, one launcher each")
      ->type_name("M")
      ->capture_default_str();
  add_integer(app, "--node-rank", out.node_rank, 0, max_nodes - 1, "this node's index")
      ->type_name("K")
      ->capture_default_str();
  app.add_option("--coordinator", "where node 0 hosts the coordination service")
      ->type_name("HOST:PORT");
  int control_port = 0;
  add_integer(app, "--control-port", control_port, 1, 65535,
              "where node 0's launcher listens for the others (default PORT + 2)")
      ->type_name("P");
  add_integer(app, "--max-restarts", out.max_restarts, 0, max_restarts_limit,
              "failures after which the launcher gives up")
      ->type_name("R")
      ->capture_default_str();
  add_integer(app, "--restart-code", out.restart_code, min_restart_code, max_exit_code,
              "the exit code of a saved worker, on which the group restarts")
      ->type_name("C")
      ->capture_default_str();
  int port = 0;
  add_integer(app, "--port", port, 0, 65535, "the coordination service's port (0: any free one)")
      ->type_name("P")
      ->capture_default_str();
  int status_base = -1;
  app.add_option("--status-port", status_base,
                 "rank r serves its status on BASE + r, the launcher on BASE + nproc (0: any "
                 "free ports)")
      ->transform(integer_in(0, 65535))
      ->type_name("BASE");
  app.add_flag("--tls", out.tls,
               "TLS 1.3 on the coordination connections (default: with --nnodes > 1)");

  if (auto code = parse_command_line(app, flags_end, argv)) return {std::nullopt, *code};
  if (restart_code_error && app.count("--restart-code") == 0)
    return {std::nullopt, usage_error(app, *restart_code_error)};
  if (auto error = check(out, app, port, status_base, control_port))
    return {std::nullopt, usage_error(app, *error)};
  return {std::move(out), 0};
}

}  // namespace lifeboat::apps
