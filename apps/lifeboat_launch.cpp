// lifeboat-launch: starts N local workers, hosts their coordination service,
// and restarts the group after a preemption (DESIGN "lifeboat-launch").
//
//   lifeboat-launch --nproc N [--max-restarts R] [--restart-code C] [--port P]
//                   [--status-port BASE] -- CMD ARGS...
//
// Restarts after the restart code do not count against --max-restarts;
// failures do. The workers get the restart code (default 42) as
// LIFEBOAT_RESTART_CODE: they exit with the code the launcher restarts on,
// whatever their platform's default (GCE's is 143).
// With --status-port, rank r serves its status endpoint on BASE + r, and the
// launcher its own (the coordinator's view: one row per worker) on
// BASE + nproc; BASE 0: each picks a free port and logs it.
// SIGTERM/SIGINT are forwarded to every worker; the launcher then exits with
// the group's outcome: the restart code after a save, and also when the
// SIGTERM ended workers before they could save (nothing was torn). Exits 0
// when every worker exited 0.

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include "messages/errors.hpp"

#include "actors/coordination_service.hpp"
#include "actors/preemption_watcher.hpp"
#include "actors/status_endpoint.hpp"
#include "actors/system_config.hpp"
#include "apps/flags.hpp"
#include "apps/worker_group.hpp"
#include "messages/log.hpp"
#include "platform/platform_detection.hpp"
#include "platform/signal_names.hpp"
#include "platform/signal_pipe.hpp"

namespace {

// One line "lifeboat-launch: ..." on stderr in a single write: CAF's threads
// log meanwhile (the coordination service), and none of their lines may cut
// one of ours.
template <class... Ts>
void say(const Ts&... xs) {
  lifeboat::write_stderr_line(lifeboat::streamed("lifeboat-launch: ", xs...));
}

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using lifeboat::default_restart_code;
using lifeboat::failure_exit_code;

constexpr int usage_exit_code = 2;
// After the first worker of a group exits, how long the others may take:
// after a preemption they are committing the same checkpoint; after a
// failure they learn of it through the coordination service.
constexpr auto preempted_group_exit_bound = 120s;
constexpr auto failed_group_exit_bound = 30s;
// Once a failed group is reaped, how long to wait for the coordination
// service's word on where the failure began. The service hears of it before
// any peer can, so the wait ends at once unless it never heard (a worker
// that failed before it joined).
constexpr auto failure_origin_wait = 1s;
constexpr size_t token_bytes = 16;

struct options {
  int nproc = 1;
  int max_restarts = 0;
  int restart_code = default_restart_code;
  uint16_t port = 0;
  std::optional<uint16_t> status_port_base;
  std::vector<std::string> command;
};

std::optional<options> parse(int argc, char** argv) {
  std::string error;
  auto f = lifeboat::apps::flags::parse(
      argc, argv, {"nproc", "max-restarts", "restart-code", "port", "status-port"}, error);
  // DESIGN's usage has no default worker count: a forgotten --nproc must not
  // quietly start a job of one.
  if (f && !f->has("nproc")) {
    error = "--nproc N is required (how many workers to start)";
    f.reset();
  }
  auto nproc = f ? f->integer("nproc", 1, 1, 4096, error) : std::nullopt;
  auto max_restarts = nproc ? f->integer("max-restarts", 0, 0, 1'000'000, error) : std::nullopt;
  auto code = max_restarts ? f->integer("restart-code", default_restart_code, 1,
                                        lifeboat::max_exit_code, error)
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
  if (!status_base) {
    say(error);
    return std::nullopt;
  }
  if (f->rest().empty()) {
    say("no worker command after '--'");
    return std::nullopt;
  }
  if (!lifeboat::is_restart_code(*code)) {
    say("--restart-code must differ from the failure code 3");
    return std::nullopt;
  }
  options out{static_cast<int>(*nproc),
              static_cast<int>(*max_restarts),
              static_cast<int>(*code),
              static_cast<uint16_t>(*port),
              std::nullopt,
              f->rest()};
  if (*status_base >= 0) out.status_port_base = static_cast<uint16_t>(*status_base);
  return out;
}

std::string random_token() {
  unsigned char bytes[token_bytes];
  auto fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  auto n = fd >= 0 ? ::read(fd, bytes, sizeof(bytes)) : -1;
  if (fd >= 0) ::close(fd);
  if (n != static_cast<ssize_t>(sizeof(bytes))) return {};
  std::string out;
  char hex[3];
  for (auto b : bytes) {
    std::snprintf(hex, sizeof(hex), "%02x", b);
    out += hex;
  }
  return out;
}

// What one generation of workers came to.
enum class outcome { finished, preempted, failed };

struct generation_result {
  outcome result = outcome::finished;
  std::vector<lifeboat::apps::worker_exit> failures;  // most likely cause first
  std::string cause;                                  // of a failed generation
};

generation_result run_generation(lifeboat::apps::worker_group& group, int restart_code,
                                 const lifeboat::preemption_watcher& watcher,
                                 const caf::actor& service, int restart) {
  generation_result out;
  // The service hears of every exit: a worker that ended before it joined
  // has no connection whose end would tell its peers, which would otherwise
  // wait for it until a timeout.
  auto tell_service = [&](const lifeboat::apps::worker_exit& e) {
    caf::anon_send(service, lifeboat::exited_atom::value, static_cast<int32_t>(e.rank),
                   static_cast<uint32_t>(restart),
                   "(pid " + std::to_string(e.pid) + ") " + e.how());
  };
  std::vector<lifeboat::apps::worker_exit> exits;
  if (auto first = group.wait_any(clock_type::time_point::max())) {
    tell_service(*first);
    exits.push_back(*first);
  }
  auto first_ok = !exits.empty() && exits[0].signal == 0 &&
                  (exits[0].code == 0 || exits[0].code == restart_code);
  auto bound = first_ok ? preempted_group_exit_bound : failed_group_exit_bound;
  for (auto& e : group.wait_all(clock_type::now() + bound)) {
    tell_service(e);
    exits.push_back(e);
  }
  for (auto& e : exits) {
    if (e.signal == 0 && e.code == restart_code)
      out.result = out.result == outcome::failed ? outcome::failed : outcome::preempted;
    else if (e.signal != 0 || e.code != 0) {
      out.result = outcome::failed;
      out.failures.push_back(e);
    }
  }
  lifeboat::apps::order_by_cause(out.failures);
  if (out.failures.empty()) return out;
  // Workers that only followed a failure exit 3 in any order; the service
  // saw which worker it began with (its restart count is its generation).
  out.cause = out.failures.front().describe();
  if (lifeboat::apps::followed_a_failure(out.failures.front())) {
    auto origin = watcher.failure_message(static_cast<uint32_t>(restart), failure_origin_wait);
    if (!origin.empty()) out.cause = origin;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  auto opts = parse(argc, argv);
  if (!opts) {
    std::cerr << "usage: lifeboat-launch --nproc N [--max-restarts R] [--restart-code C] [--port P]"
                 " [--status-port BASE] -- CMD ARGS...\n";
    return usage_exit_code;
  }
  // Block the signals we wait for before any thread exists, so every thread
  // (CAF's included) inherits the mask and only our waiters see them.
  auto waited = lifeboat::signal_set({SIGTERM, SIGINT, SIGCHLD, SIGUSR2});
  ::pthread_sigmask(SIG_BLOCK, &waited, nullptr);

  std::string token = random_token();
  if (auto env = std::getenv("LIFEBOAT_CLUSTER_TOKEN"); env != nullptr && *env != '\0') token = env;
  if (token.empty()) {
    say("cannot read /dev/urandom for a cluster token");
    return failure_exit_code;
  }

  lifeboat::system_config cfg;
  caf::actor_system sys{cfg};
  lifeboat::service_config service_cfg;
  service_cfg.port = opts->port;
  service_cfg.world_size = opts->nproc;
  service_cfg.token = token;
  auto service = lifeboat::spawn_coordination_service(sys, service_cfg);
  if (!service) {
    say("cannot host the coordination service on port ", opts->port, ": ",
        lifeboat::describe(service.error()));
    return failure_exit_code;
  }
  auto port = service->second;
  lifeboat::preemption_watcher watcher{sys, service->first};
  caf::actor status_endpoint;
  if (opts->status_port_base) {
    auto base = *opts->status_port_base;
    auto spawned = lifeboat::spawn_coordinator_status_endpoint(
        sys, service->first, opts->nproc,
        base == 0 ? 0 : static_cast<uint16_t>(base + opts->nproc));
    if (!spawned) {
      say("cannot serve its status endpoint: ", lifeboat::describe(spawned.error()));
      caf::anon_send_exit(service->first, caf::exit_reason::user_shutdown);
      return failure_exit_code;
    }
    status_endpoint = spawned->first;
  }

  lifeboat::apps::worker_group group{
      opts->command,
      {{"LIFEBOAT_WORLD_SIZE", std::to_string(opts->nproc)},
       {"LIFEBOAT_COORDINATOR", "127.0.0.1:" + std::to_string(port)},
       {"LIFEBOAT_COORDINATOR_EXTERNAL", "1"},
       {"LIFEBOAT_CLUSTER_TOKEN", token},
       {lifeboat::kRestartCodeVariable, std::to_string(opts->restart_code)}},
      opts->status_port_base};

  // Signals to the launcher go to every worker: they save and exit with the
  // restart code, and the launcher then exits with the group's outcome.
  std::atomic<int> received_signal{0};
  std::thread forwarder{[&] {
    auto set = lifeboat::signal_set({SIGTERM, SIGINT, SIGUSR2});
    for (;;) {
      int signo = 0;
      if (::sigwait(&set, &signo) != 0) continue;
      if (signo == SIGUSR2) return;  // our own stop request, never from outside
      received_signal = signo;
      lifeboat::log(lifeboat::log_level::info, "launch", lifeboat::signal_name(signo),
                    " received; forwarding to every worker");
      group.signal_all(signo);
    }
  }};

  int exit_code = 0;
  int failures = 0;
  for (int restart = 0;; ++restart) {
    if (auto error = group.start(opts->nproc, restart)) {
      say(*error);
      group.signal_all(SIGKILL);
      group.wait_all(clock_type::now());
      exit_code = failure_exit_code;
      break;
    }
    // A signal that came while this generation was being started reached
    // only the workers started before it: send it again, to all of them.
    // (The forwarder stores the signal before it sends it, so a signal that
    // this check misses is sent after start, to every worker.)
    if (received_signal != 0) group.signal_all(received_signal);
    auto result = run_generation(group, opts->restart_code, watcher, service->first, restart);
    if (result.result == outcome::finished) {
      say("all ", opts->nproc, " workers finished");
      break;
    }
    if (result.result == outcome::preempted) {
      say("workers saved a checkpoint and exited with the restart code (",
          watcher.preemption_message(), ")");
      if (received_signal != 0) {
        exit_code = opts->restart_code;
        break;
      }
      continue;
    }
    ++failures;
    for (auto& f : result.failures) say(f.describe());
    // A forwarded SIGTERM that ended workers before they could save (still
    // starting, before their handler took the signal, or a command without
    // lifeboat) is the notice taking effect, not a failure: nothing was torn,
    // the latest complete checkpoint stands, and the job is to be restarted
    // from it, as after a save.
    if (received_signal == SIGTERM && lifeboat::apps::ended_by_signal(result.failures, SIGTERM)) {
      say("stopped by SIGTERM before the workers could save: ", result.cause,
          "; the latest complete checkpoint stands, exiting with ", opts->restart_code);
      exit_code = opts->restart_code;
      break;
    }
    // Workers that a forwarded signal ended otherwise (SIGINT, where they take
    // only SIGTERM as a notice) are not restarted: the signal asked for the end.
    if (received_signal != 0) {
      say("stopped by ", lifeboat::signal_name(received_signal), ": ", result.cause);
      exit_code = failure_exit_code;
      break;
    }
    if (failures > opts->max_restarts) {
      say("giving up: ", result.cause, " (", failures, " failure(s), --max-restarts ",
          opts->max_restarts, ")");
      exit_code = failure_exit_code;
      break;
    }
    say("restarting after failure ", failures, " of at most ", opts->max_restarts, ": ",
        result.cause);
  }

  ::pthread_kill(forwarder.native_handle(), SIGUSR2);
  forwarder.join();
  lifeboat::stop_status_endpoint(status_endpoint);
  caf::anon_send_exit(service->first, caf::exit_reason::user_shutdown);
  return exit_code;
}
