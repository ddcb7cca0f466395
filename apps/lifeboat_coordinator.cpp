// lifeboat-coordinator: hosts a job's coordination service in its own process,
// for jobs whose workers are not started by lifeboat-launch.
//
//   lifeboat-coordinator --port P --world-size N [--token T] [--host H]
//                        [--heartbeat-timeout-ms MS] [--status-port P] [--tls]
//
// The token comes from --token or LIFEBOAT_CLUSTER_TOKEN. TLS 1.3 is on with
// --tls, with LIFEBOAT_TLS=1, or by default when --host is not a loopback
// address (LIFEBOAT_TLS=0 turns it off). SIGINT stops it at once. A notice
// signal (SIGTERM; SIGHUP unless ignored; SIGUSR1 under SLURM, as for the
// workers) with workers joined gives them a notice unless one of them
// already has one (due at its own grace period: its platform's or
// LIFEBOAT_GRACE_PERIOD_S; else in 120 s), and stops once every worker that
// joined has left (120 s at most), as they save through it. SIGUSR1 and
// SIGUSR2 are otherwise ignored, with a line.

#include <pthread.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include "actors/coordination/coordination_service.hpp"
#include "actors/coordination/heartbeat_schedule.hpp"
#include "actors/coordination/tls_config.hpp"
#include "actors/preemption/cluster_phase.hpp"
#include "actors/preemption/job_history.hpp"
#include "actors/preemption/preemption_watcher.hpp"
#include "actors/status/status_endpoint.hpp"
#include "actors/system_config.hpp"
#include "apps/command_line.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "platform/clock.hpp"
#include "platform/environment.hpp"
#include "platform/platform_detection.hpp"
#include "platform/signal_names.hpp"
#include "platform/signal_pipe.hpp"
#include "platform/text_parse.hpp"

namespace {

constexpr const char* program = "lifeboat-coordinator";
constexpr const char* token_env = "LIFEBOAT_CLUSTER_TOKEN";
constexpr int64_t max_world_size = 1 << 20;
constexpr int64_t default_heartbeat_timeout_ms = 10000;

constexpr const char* synopsis =
    "usage: lifeboat-coordinator --port P --world-size N [--token T] [--host H]\n"
    "                            [--heartbeat-timeout-ms MS] [--status-port P] [--tls]\n";

// After a SIGTERM: how long the service keeps serving workers that are
// still here, and how often it looks.
constexpr auto drain_bound = std::chrono::seconds{120};
constexpr auto drain_check_interval = std::chrono::milliseconds{100};

enum class wait_end { done, timed_out, interrupted };

// Waits until `done` holds, `bound` passes or a SIGINT (a person) comes. A
// repeated SIGTERM does not end it: a platform may send it again.
wait_end wait_for(const std::function<bool()>& done, std::chrono::seconds bound,
                  const sigset_t& stops) {
  auto until = std::chrono::steady_clock::now() + bound;
  for (;;) {
    if (done()) return wait_end::done;
    timespec zero{};
    if (sigtimedwait(&stops, nullptr, &zero) == SIGINT) {
      lifeboat::log(lifeboat::log_level::info, program,
                    "SIGINT received: not waiting for the workers");
      return wait_end::interrupted;
    }
    if (std::chrono::steady_clock::now() >= until) return wait_end::timed_out;
  }
}

// Overwrites the value of --token in the process's arguments once they are
// parsed. Why: /proc/PID/cmdline (ps) shows them to every local user, and
// the token is the job's whole secret (the join's proof, TLS's key).
void hide_token_argument(int argc, char** argv) {
  constexpr std::string_view flag = "--token";
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    char* value = nullptr;
    if (arg == flag && i + 1 < argc)
      value = argv[i + 1];
    else if (arg.substr(0, flag.size() + 1) == std::string{flag} + "=")
      value = argv[i] + flag.size() + 1;
    if (value != nullptr) std::memset(value, 'x', std::strlen(value));
  }
}

// What a notice signal (`signo`: SIGTERM, SIGHUP, SIGUSR1 under SLURM) does
// while workers are joined. Without the service they cannot agree on a
// step: stopping at once failed their agreement ("coordination service
// lost") and lost the checkpoint.
//   1. When no worker has recorded a notice, the signal came here first
//      or alone (this host is going away; an operator stops the job here):
//      the workers get a notice of this process's, due when it stops
//      serving them: at its own grace period (`grace`: its platform's or
//      LIFEBOAT_GRACE_PERIOD_S; a pod is killed then), else at drain_bound.
//      Each worker saves by then, and no later than its own grace period
//      allows. One that reaches every process at once (`kill -TERM -PGID`,
//      scancel, a node drained) may give them two; the earliest deadline
//      wins, as for any two notices.
//   2. Serve until every worker that joined has left or was lost,
//      drain_bound at most.
// A SIGINT ends the wait at once.
void serve_until_workers_leave(lifeboat::preemption_watcher& watcher, const sigset_t& stops,
                               int signo, std::chrono::seconds grace) {
  using namespace lifeboat;
  auto present = watcher.workers_present();
  if (present == 0) return;
  auto name = signal_name(signo);
  if (watcher.preemption_message().empty()) {
    auto own = grace.count() > 0 && grace < drain_bound;
    auto due = own ? grace : drain_bound;
    watcher.raise_notice(
        "signal:" + name,
        std::string{program} + " received " + name + ": the coordination service is going away",
        unix_now_ms() + std::chrono::milliseconds{due}.count());
    log(log_level::info, program, name, " received and no worker has recorded a notice: gave the ",
        present, " worker(s) here one, due in ", due.count(), " s (",
        own ? "this process's grace period" : "the longest it serves them",
        "), so that they save before the service goes");
  }
  log(log_level::info, program, name, " received: serving the ", present,
      " worker(s) still here until they leave (at most ", drain_bound.count(),
      " s; SIGINT stops at once)");
  auto left = wait_for([&] { return watcher.block_until_worker_exit(drain_check_interval); },
                       drain_bound, stops);
  if (left == wait_end::timed_out)
    log(log_level::warning, program, watcher.workers_present(), " worker(s) still here after ",
        drain_bound.count(), " s: stopping anyway");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace lifeboat;
  service_config cfg;
  CLI::App app{"", program};
  apps::configure_app(app, synopsis);
  int port = 0;
  apps::add_integer(app, "--port", port, 0, 65535, "where the service listens (0: any free port)")
      ->type_name("P")
      ->required();
  apps::add_integer(app, "--world-size", cfg.world_size, 1, max_world_size, "workers of the job")
      ->type_name("N")
      ->required();
  const char* env_token = std::getenv(token_env);
  cfg.token = env_token != nullptr ? env_token : "";
  app.add_option("--token", cfg.token,
                 std::string{"the cluster token (default: "} + token_env + ")")
      ->type_name("T");
  app.add_option("--host", cfg.host, "the address the service binds")
      ->type_name("H")
      ->capture_default_str();
  int64_t heartbeat_ms = default_heartbeat_timeout_ms;
  apps::add_integer(app, "--heartbeat-timeout-ms", heartbeat_ms, min_heartbeat_timeout.count(),
                    INT32_MAX, "a worker silent this long is lost")
      ->type_name("MS")
      ->capture_default_str();
  int status_port = 0;
  auto* status_flag = apps::add_integer(app, "--status-port", status_port, 0, 65535,
                                        "serve the status endpoint here (0: any free port)")
                          ->type_name("P");
  bool tls_flag = false;
  app.add_flag("--tls", tls_flag,
               "TLS 1.3 on every connection (default: when --host is not a loopback address)");
  if (auto code = apps::parse_command_line(app, argc, argv)) return *code;
  hide_token_argument(argc, argv);
  // An IPv6 address may come in brackets, as in LIFEBOAT_COORDINATOR.
  cfg.host = without_brackets(cfg.host);
  // Workers on other hosts reach a service that binds beyond loopback.
  auto tls = read_tls_config(std::getenv, !is_loopback_host(cfg.host));
  if (!tls) {
    write_stderr_line(streamed(program, ": ", describe(tls.error())));
    return EXIT_FAILURE;
  }
  cfg.tls = *tls;
  // Its grace period is the deadline of the notice it gives its workers.
  auto platform = named_platform_defaults(process_environment());
  if (!platform) {
    write_stderr_line(streamed(program, ": ", describe(platform.error())));
    return EXIT_FAILURE;
  }
  if (tls_flag) cfg.tls.enabled = true;
  cfg.port = static_cast<uint16_t>(port);
  cfg.heartbeat_timeout = std::chrono::milliseconds(heartbeat_ms);
  cfg.annotate_status = annotate_preemption_status;
  if (cfg.token.empty())
    log(log_level::warning, program, "no cluster token (--token or ", token_env,
        "): any local process can join");

  // The workers' notice signals end it as SIGTERM does: under SLURM
  // (--signal=USR1@N reaches every process of a job step) and on a terminal
  // that hangs up, each of them used to kill it at once, and its workers
  // with the service. SIGUSR1 and SIGUSR2 are ignored where they are none.
  auto job = job_signals_for(process_environment());
  auto waited = job.notices;
  waited.push_back(SIGINT);
  waited.insert(waited.end(), job.ignored.begin(), job.ignored.end());
  // Signals are blocked before the actor system exists so that its threads
  // inherit the mask and only the sigwait below ever sees them.
  auto stop_signals = signal_set(waited);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  auto service = spawn_coordination_service(sys, cfg);
  if (!service) {
    write_stderr_line(streamed(program, ": ", describe(service.error())));
    return EXIT_FAILURE;
  }
  std::optional<status_endpoint_actor> status_actor;
  // Follows the workers for the end (serve_until_workers_leave) and for the
  // status page's row.
  std::optional<preemption_watcher> watcher{std::in_place, sys, service->first};
  if (status_flag->count() > 0) {
    auto spawned = spawn_coordinator_status_endpoint(
        sys, service->first, watcher->actor(), spawn_job_history(sys, service->first),
        cfg.world_size, static_cast<uint16_t>(status_port));
    if (!spawned) {
      write_stderr_line(streamed(program, ": ", describe(spawned.error())));
      caf::anon_send_exit(service->first, caf::exit_reason::user_shutdown);
      return EXIT_FAILURE;
    }
    status_actor = spawned->first;
  }
  // One write: the service's threads log meanwhile, and this is the line
  // that callers wait for.
  write_stderr_line(
      streamed(program, ": listening on ", endpoint{cfg.host, service->second}.to_string()));

  int signal = 0;
  for (;;) {
    if (sigwait(&stop_signals, &signal) != 0) continue;
    if (signal == SIGINT || job.is_notice(signal)) break;
    log(log_level::warning, program, ignored_signal_message(signal));
  }
  if (signal != SIGINT)
    serve_until_workers_leave(*watcher, stop_signals, signal, platform->grace_period);
  log(log_level::info, program, "stopping on ", signal_name(signal));
  if (status_actor) caf::anon_send_exit(*status_actor, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(service->first, caf::exit_reason::user_shutdown);
  status_actor.reset();
  watcher.reset();
  service = caf::error{};
  return EXIT_SUCCESS;
}
