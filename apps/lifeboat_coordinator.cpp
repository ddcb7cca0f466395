// lifeboat-coordinator: hosts a job's coordination service in its own process,
// for jobs whose workers are not started by lifeboat-launch.
//
//   lifeboat-coordinator --port P --world-size N [--token T] [--host H]
//                        [--heartbeat-timeout-ms MS] [--status-port P]
//
// The token comes from --token or LIFEBOAT_CLUSTER_TOKEN. SIGTERM or SIGINT
// stops it cleanly.

#include <pthread.h>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include "actors/coordination/coordination_service.hpp"
#include "actors/preemption/cluster_phase.hpp"
#include "actors/status/status_endpoint.hpp"
#include "actors/system_config.hpp"
#include "apps/flags.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "platform/signal_pipe.hpp"

namespace {

constexpr const char* program = "lifeboat-coordinator";
constexpr const char* token_env = "LIFEBOAT_CLUSTER_TOKEN";
constexpr int64_t max_world_size = 1 << 20;
constexpr int64_t default_heartbeat_timeout_ms = 10000;
constexpr int exit_usage = 2;

constexpr const char* usage_line =
    " --port P --world-size N [--token T] [--host H] [--heartbeat-timeout-ms MS]"
    " [--status-port P]\n";

int usage(const std::string& error) {
  std::cerr << program << ": " << error << "\n"
            << "usage: " << program << usage_line;
  return exit_usage;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace lifeboat;
  if (apps::flags::asks_for_help(argc, argv)) {
    std::cout << "usage: " << program << usage_line;
    return 0;
  }
  std::string error;
  auto args = apps::flags::parse(
      argc, argv, {"port", "world-size", "token", "host", "heartbeat-timeout-ms", "status-port"},
      error);
  if (!args) return usage(error);
  if (!args->has("port") || !args->has("world-size"))
    return usage("--port and --world-size are required");
  auto port = args->integer("port", 0, 0, 65535, error);
  auto world_size = args->integer("world-size", 1, 1, max_world_size, error);
  auto heartbeat_ms =
      args->integer("heartbeat-timeout-ms", default_heartbeat_timeout_ms, 1, INT32_MAX, error);
  auto status_port = args->integer("status-port", 0, 0, 65535, error);
  if (!port || !world_size || !heartbeat_ms || !status_port) return usage(error);
  service_config cfg;
  cfg.host = args->text("host", cfg.host);
  cfg.port = static_cast<uint16_t>(*port);
  cfg.world_size = static_cast<int>(*world_size);
  cfg.heartbeat_timeout = std::chrono::milliseconds(*heartbeat_ms);
  cfg.annotate_status = annotate_preemption_status;
  const char* env_token = std::getenv(token_env);
  cfg.token = args->text("token", env_token != nullptr ? env_token : "");
  if (cfg.token.empty())
    log(log_level::warning, program, "no cluster token (--token or ", token_env,
        "): any local process can join");

  // Signals are blocked before the actor system exists so that its threads
  // inherit the mask and only the sigwait below ever sees them.
  auto stop_signals = signal_set({SIGTERM, SIGINT});
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  auto service = spawn_coordination_service(sys, cfg);
  if (!service) {
    write_stderr_line(streamed(program, ": ", describe(service.error())));
    return EXIT_FAILURE;
  }
  std::optional<caf::actor> endpoint;
  if (args->has("status-port")) {
    auto spawned = spawn_coordinator_status_endpoint(sys, service->first, cfg.world_size,
                                                     static_cast<uint16_t>(*status_port));
    if (!spawned) {
      write_stderr_line(streamed(program, ": ", describe(spawned.error())));
      caf::anon_send_exit(service->first, caf::exit_reason::user_shutdown);
      return EXIT_FAILURE;
    }
    endpoint = spawned->first;
  }
  // One write: the service's threads log meanwhile, and this is the line
  // that callers wait for.
  write_stderr_line(streamed(program, ": listening on ", cfg.host, ":", service->second));

  int signal = 0;
  sigwait(&stop_signals, &signal);
  log(log_level::info, program, "stopping on signal ", signal);
  if (endpoint) caf::anon_send_exit(*endpoint, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(service->first, caf::exit_reason::user_shutdown);
  endpoint.reset();
  service = caf::error{};
  return EXIT_SUCCESS;
}
