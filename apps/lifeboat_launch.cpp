// lifeboat-launch: starts N local workers, hosts their coordination service,
// and restarts the group after a preemption (DESIGN "lifeboat-launch").
//
//   lifeboat-launch --nproc N [--max-restarts R] [--restart-code C] [--port P]
//                   [--status-port BASE] [--tls] -- CMD ARGS...
//   lifeboat-launch --nnodes M --node-rank K --coordinator HOST:PORT --nproc N
//                   [--control-port P] [...] -- CMD ARGS...
//
// With --nnodes M > 1 (DESIGN "Multi-node lifeboat-launch") node 0's
// launcher hosts the service on HOST:PORT and listens for the other
// launchers on HOST:CONTROL_PORT (apps/node_link); it decides every
// generation for the whole job (apps/multi_node_launch).
//
// Restarts after the restart code do not count against --max-restarts;
// failures do. The workers get the restart code (default 42) as
// LIFEBOAT_RESTART_CODE: they exit with the code the launcher restarts on,
// whatever their platform's default (GCE's is 143).
// With --status-port, rank r serves its status endpoint on BASE + r, and the
// launcher its own (the coordinator's view: one row per worker) on
// BASE + nproc; BASE 0: each picks a free port and logs it.
// With --tls (default with --nnodes > 1, LIFEBOAT_TLS overrides), every
// coordination connection runs TLS 1.3; the workers get LIFEBOAT_TLS.
// SIGTERM/SIGINT are forwarded to every worker; the launcher then exits with
// the group's outcome: the restart code after a save, and also when the
// SIGTERM ended workers before they could save (nothing was torn). A SIGHUP
// (a terminal that hung up) is taken as a SIGTERM, unless it is ignored
// (nohup). SIGUSR1 is forwarded as a SIGTERM is where the workers take it as
// a notice (SLURM), and ignored elsewhere. Exits 0 when every worker exited 0.

#include <fcntl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <map>
#include <optional>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include "messages/address.hpp"
#include "messages/errors.hpp"

#include "actors/coordination/coordination_service.hpp"
#include "actors/coordination/tls_config.hpp"
#include "actors/coordination/tls_context.hpp"
#include "actors/preemption/cluster_phase.hpp"
#include "actors/preemption/job_history.hpp"
#include "actors/preemption/preemption_watcher.hpp"
#include "actors/status/status_endpoint.hpp"
#include "actors/system_config.hpp"
#include "apps/command_line.hpp"
#include "apps/launch_options.hpp"
#include "apps/launch_policy.hpp"
#include "apps/multi_node_launch.hpp"
#include "apps/worker_group.hpp"
#include "messages/log.hpp"
#include "platform/environment.hpp"
#include "platform/platform_detection.hpp"
#include "platform/signal_names.hpp"
#include "platform/signal_pipe.hpp"

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using lifeboat::failure_exit_code;
using lifeboat::apps::say;
using lifeboat::apps::usage_exit_code;

constexpr size_t token_bytes = 16;
// How long node 0's launcher waits for the others to connect, and another
// for node 0's: launchers of one job start within the time a worker waits
// for its peers to join.
constexpr auto node_wait_bound = 120s;

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

// Every exit of one generation of this launcher's workers.
std::vector<lifeboat::apps::worker_exit> run_generation(
    lifeboat::apps::worker_group& group, int restart_code, const caf::actor& service,
    const lifeboat::preemption_watcher& watcher, int restart,
    const std::atomic<int>& received_signal, const std::atomic<int64_t>& forwarded_at_ns) {
  // The service hears of every exit: a worker that ended before it joined
  // has no connection whose end would tell its peers, which would otherwise
  // wait for it until a timeout.
  auto tell_service = [&](const lifeboat::apps::worker_exit& e) {
    caf::anon_send(service, lifeboat::exited_atom::value, static_cast<int32_t>(e.rank),
                   static_cast<uint32_t>(restart),
                   "(pid " + std::to_string(e.pid) + ") " + e.how());
  };
  std::vector<lifeboat::apps::worker_exit> exits;
  // Reaps exits until `until` (with first_only, until one came), and kills
  // every worker the service declares lost for its silence on the way: its
  // peers give up on it and end, but a process that is stopped or frozen
  // never ends by itself, and held the generation, and its restart, until
  // the deadline below. (A worker lost with its connection is ending.)
  auto reap_until = [&](clock_type::time_point until, bool first_only) {
    while (!group.empty() && clock_type::now() < until) {
      while (auto e = group.wait_any(
                 std::min(until, clock_type::now() + lifeboat::apps::silent_check_interval))) {
        tell_service(*e);
        exits.push_back(*e);
      }
      if (first_only && !exits.empty()) return;
      group.kill_lost(watcher.silent_ranks(static_cast<uint32_t>(restart)));
    }
  };
  // Until the first exit; a forwarded signal that no worker heeds ends them
  // meanwhile (unheeded_signal_check).
  lifeboat::apps::unheeded_signal_check unheeded;
  while (exits.empty() && !group.empty()) {
    reap_until(clock_type::now() + lifeboat::apps::silent_check_interval, true);
    if (exits.empty())
      lifeboat::apps::end_unheeded_workers(unheeded, group, forwarded_at_ns, received_signal,
                                           [&] { return !watcher.preemption_message().empty(); });
  }
  auto bound = exits.empty() ? lifeboat::apps::failed_group_exit_bound
                             : lifeboat::apps::group_exit_bound(exits[0], restart_code);
  reap_until(clock_type::now() + bound, false);
  for (auto& e : group.wait_all(clock_type::now())) {
    tell_service(e);
    exits.push_back(e);
  }
  return exits;
}

// The single-node launcher's generations: DESIGN "lifeboat-launch".
int run_single_node(const lifeboat::apps::launch_options& opts, lifeboat::apps::worker_group& group,
                    const std::atomic<int>& received_signal,
                    const std::atomic<int64_t>& forwarded_at_ns, const caf::actor& service,
                    const lifeboat::preemption_watcher& watcher) {
  lifeboat::apps::restart_counts counts;
  for (int restart = 0;; ++restart) {
    if (auto error = group.start(opts.nproc, restart)) {
      say(*error);
      group.signal_all(SIGKILL);
      group.wait_all(clock_type::now());
      return failure_exit_code;
    }
    // A signal that came while this generation was being started reached
    // only the workers started before it: send it again, to all of them.
    // (The forwarder stores the signal before it sends it, so a signal that
    // this check misses is sent after start, to every worker.)
    if (received_signal != 0) group.signal_all(received_signal);
    auto exits = run_generation(group, opts.restart_code, service, watcher, restart,
                                received_signal, forwarded_at_ns);
    auto result = lifeboat::apps::classify_generation(exits, opts.restart_code, [&] {
      return watcher.failure_message(static_cast<uint32_t>(restart),
                                     lifeboat::apps::failure_origin_wait);
    });
    auto v = lifeboat::apps::decide(result, received_signal, counts, opts.max_restarts,
                                    opts.restart_code, opts.world_size(),
                                    [&] { return watcher.preemption_message(); });
    for (auto& line : v.lines) say(line);
    if (v.exit_code) return *v.exit_code;
    // A signal during the backoff ends the job as one before a start would:
    // no worker runs, and the latest complete checkpoint stands.
    for (auto until = clock_type::now() + v.delay; clock_type::now() < until;) {
      if (received_signal != 0)
        return lifeboat::apps::stopped_without_workers(received_signal, opts.restart_code,
                                                       lifeboat::apps::waiting_to_restart);
      std::this_thread::sleep_for(std::min<clock_type::duration>(
          until - clock_type::now(), lifeboat::apps::backoff_check_interval));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed = lifeboat::apps::parse_launch_options(argc, argv);
  if (!parsed.options) return parsed.exit_code;
  const auto& opts = *parsed.options;
  // A command that cannot run fails every generation alike: refused now,
  // named, where each restart of --max-restarts ran it again.
  if (auto why = lifeboat::apps::worker_group::unrunnable(opts.command.front())) {
    say("cannot run '" + opts.command.front() + "': " + *why);
    return usage_exit_code;
  }
  // Block the signals we wait for before any thread exists, so every thread
  // (CAF's included) inherits the mask and only our waiters see them.
  // SIGHUP (the terminal hung up) is a SIGTERM to the workers, unless the
  // launcher runs under nohup: then every worker ignores it as well.
  // Every notice signal of the workers' platform is forwarded as SIGTERM is
  // (SLURM's --signal=USR1@N reaches every process of a job step, this
  // launcher's too); SIGUSR1 and SIGUSR2 are ignored where they are none.
  // Left at their default action, either ended the launcher, and every
  // worker with it, without a checkpoint.
  auto job = lifeboat::job_signals_for(lifeboat::process_environment());
  auto stops = job.notices;
  stops.push_back(SIGINT);
  const auto& ignored = job.ignored;
  auto waited_signals = stops;
  waited_signals.insert(waited_signals.end(), ignored.begin(), ignored.end());
  waited_signals.push_back(SIGCHLD);
  auto waited = lifeboat::signal_set(waited_signals);
  ::pthread_sigmask(SIG_BLOCK, &waited, nullptr);

  std::string token;
  if (auto env = std::getenv("LIFEBOAT_CLUSTER_TOKEN"); env != nullptr && *env != '\0') token = env;
  // One launcher alone may invent the job's secret; launchers on several
  // nodes cannot agree on one, and the service is reachable from the network.
  if (token.empty() && opts.multi_node()) {
    say("LIFEBOAT_CLUSTER_TOKEN is not set: every launcher of a multi-node job needs it, the "
        "same on every node");
    return usage_exit_code;
  }
  if (token.empty()) token = random_token();
  if (token.empty()) {
    say("cannot read /dev/urandom for a cluster token");
    return failure_exit_code;
  }
  // A multi-node job's coordination connections cross the network: TLS is
  // on unless LIFEBOAT_TLS=0. The workers are told the outcome, so that they
  // and the service agree whatever their own defaults would be.
  auto tls = lifeboat::read_tls_config(std::getenv, opts.multi_node());
  if (!tls) {
    say(lifeboat::describe(tls.error()));
    return usage_exit_code;
  }
  if (opts.tls) tls->enabled = true;
  // The launchers' control channel (multi-node) crosses the same network as
  // the workers' connections: the same TLS setting, key or certificates.
  std::shared_ptr<lifeboat::tls_context> control_tls;
  if (opts.multi_node() && tls->enabled) {
    auto made = lifeboat::tls_context::shared(
        *tls, token, opts.node_rank == 0 ? lifeboat::tls_role::server : lifeboat::tls_role::client);
    if (!made) {
      say("TLS for the launchers' control channel: " + lifeboat::describe(made.error()));
      return usage_exit_code;
    }
    control_tls = std::move(*made);
  }

  // Node 0 (or the only node) hosts the service; the others reach it.
  auto hosts_service = opts.node_rank == 0;
  lifeboat::system_config cfg;
  caf::actor_system sys{cfg};
  caf::actor service;
  uint16_t port = opts.port;
  if (hosts_service) {
    lifeboat::service_config service_cfg;
    service_cfg.host = opts.host;
    service_cfg.port = opts.port;
    service_cfg.world_size = opts.world_size();
    service_cfg.token = token;
    service_cfg.annotate_status = lifeboat::annotate_preemption_status;
    service_cfg.tls = *tls;
    auto spawned = lifeboat::spawn_coordination_service(sys, service_cfg);
    if (!spawned) {
      say(lifeboat::streamed("cannot host the coordination service on port ", opts.port, ": ",
                             lifeboat::describe(spawned.error())));
      return failure_exit_code;
    }
    service = spawned->first;
    port = spawned->second;
  }
  std::optional<lifeboat::preemption_watcher> watcher;
  if (hosts_service) watcher.emplace(sys, service);
  auto stop_service = [&] {
    if (service) caf::anon_send_exit(service, caf::exit_reason::user_shutdown);
  };
  lifeboat::status_endpoint_actor status_endpoint;
  if (opts.status_port_base && hosts_service) {
    auto base = *opts.status_port_base;
    auto spawned = lifeboat::spawn_coordinator_status_endpoint(
        sys, service, watcher->actor(), lifeboat::spawn_job_history(sys, service),
        opts.world_size(), base == 0 ? 0 : static_cast<uint16_t>(base + opts.nproc));
    if (!spawned) {
      say("cannot serve its status endpoint: " + lifeboat::describe(spawned.error()));
      stop_service();
      return failure_exit_code;
    }
    status_endpoint = spawned->first;
  }

  // Node 0 waits for every other launcher before any worker starts; the
  // others wait for node 0's (which hosts the service when it listens).
  std::vector<lifeboat::apps::link_ptr> links;
  lifeboat::apps::link_ptr link_to_zero;
  if (opts.multi_node()) {
    // A SIGTERM or SIGINT (blocked, so pending) ends the wait: a job cancelled
    // while one node never came would otherwise wait out the bound, and be
    // killed by its scheduler in the middle of it.
    auto stop_signals = lifeboat::signal_set(stops);
    int stop_fd = ::signalfd(-1, &stop_signals, SFD_CLOEXEC);
    lifeboat::apps::node_wait wait{clock_type::now() + node_wait_bound, stop_fd};
    lifeboat::apps::job_shape shape{opts.nnodes, opts.nproc, opts.restart_code};
    std::variant<std::vector<lifeboat::apps::link_ptr>, std::string> accepted;
    std::variant<lifeboat::apps::link_ptr, std::string> connected;
    std::string error;
    if (hosts_service) {
      auto listener = lifeboat::apps::node_listener::listen(opts.host, opts.control_port, error);
      if (listener) {
        say("waiting for the launchers of " + std::to_string(opts.nnodes - 1) +
            " other node(s) on " + lifeboat::host_port(opts.host, opts.control_port));
        accepted = listener->accept_nodes(token, shape, wait, control_tls);
        if (auto* e = std::get_if<std::string>(&accepted)) error = *e;
      }
    } else {
      connected = lifeboat::apps::connect_to_node_zero(
          opts.host, opts.control_port, token, opts.node_rank, shape, wait,
          [&] {
            say("waiting for node 0's launcher at " +
                lifeboat::host_port(opts.host, opts.control_port) + " (at most " +
                std::to_string(node_wait_bound.count()) + " s)");
          },
          control_tls);
      if (auto* e = std::get_if<std::string>(&connected)) error = *e;
    }
    std::optional<int> code;
    if (error == lifeboat::apps::wait_interrupted) {
      signalfd_siginfo info{};
      auto signo = ::read(stop_fd, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info)) &&
                           info.ssi_signo != SIGHUP
                       ? static_cast<int>(info.ssi_signo)
                       : SIGTERM;
      code = lifeboat::apps::stopped_without_workers(signo, opts.restart_code,
                                                     lifeboat::apps::waiting_for_launchers);
    } else if (!error.empty()) {
      say(error);
      code = failure_exit_code;
    }
    if (stop_fd >= 0) ::close(stop_fd);
    if (code) {
      lifeboat::stop_status_endpoint(status_endpoint);
      stop_service();
      return *code;
    }
    if (hosts_service)
      links = std::move(std::get<0>(accepted));
    else
      link_to_zero = std::move(std::get<0>(connected));
  }

  // A service bound to every interface is reached through loopback here.
  auto reach = opts.host;
  if (hosts_service && opts.host == "0.0.0.0") reach = "127.0.0.1";
  if (hosts_service && opts.host == "::") reach = "::1";
  std::map<std::string, std::string> worker_env{
      {"LIFEBOAT_WORLD_SIZE", std::to_string(opts.world_size())},
      {"LIFEBOAT_COORDINATOR", lifeboat::host_port(reach, port)},
      {"LIFEBOAT_COORDINATOR_EXTERNAL", "1"},
      {"LIFEBOAT_CLUSTER_TOKEN", token},
      {lifeboat::tls_env, tls->enabled ? "1" : "0"},
      {lifeboat::kRestartCodeVariable, std::to_string(opts.restart_code)},
      {"WORLD_SIZE", std::to_string(opts.world_size())}};
  // torchrun's rendezvous for a trainer written for it (torch's env://, the
  // default of init_process_group): rank 0's store beside the coordination
  // service, at the port next to it, unless the launcher was given its own.
  auto env = lifeboat::process_environment();
  if (lifeboat::env_value(env, "MASTER_ADDR") == nullptr) worker_env["MASTER_ADDR"] = reach;
  if (lifeboat::env_value(env, "MASTER_PORT") == nullptr && port < 65535) {
    auto master_port = static_cast<uint16_t>(port + lifeboat::apps::trainer_port_offset);
    worker_env["MASTER_PORT"] = std::to_string(master_port);
    // Rank 0's store will listen there: a port already taken (another job's
    // service beside this one's, --port 29400 and 29401) fails every trainer
    // that uses env:// in its init_process_group, far from the cause. Said
    // once here; a job that does not use torch's rendezvous goes on alike.
    std::string taken;
    if (hosts_service && !lifeboat::apps::node_listener::listen(opts.host, master_port, taken))
      lifeboat::log(lifeboat::log_level::warning, "launch", "MASTER_PORT ", master_port,
                    " (where torch's env:// rendezvous listens, in rank 0) is taken: ", taken,
                    "; a trainer calling init_process_group on env:// will fail there (give "
                    "--port another port, or set MASTER_PORT)");
  }
  lifeboat::apps::worker_group group{opts.command, std::move(worker_env), opts.status_port_base,
                                     opts.node_rank};

  // Not fatal: without it, what the workers leave behind outlives them (as
  // it did before), and only the next generation may find ports taken.
  if (auto error = lifeboat::apps::worker_group::become_subreaper())
    lifeboat::log(lifeboat::log_level::warning, "launch", *error,
                  ": processes the workers leave behind will not be ended");

  // Signals to the launcher go to every worker: they save and exit with the
  // restart code, and the launcher then exits with the group's outcome.
  std::atomic<int> received_signal{0};
  std::atomic<int64_t> forwarded_at_ns{0};  // when the first signal was forwarded
  auto forward = [&](int signo) {
    int64_t none = 0;
    forwarded_at_ns.compare_exchange_strong(none, lifeboat::apps::forwarded_now_ns());
    received_signal = signo;
    group.signal_all(signo);
  };
  std::atomic<bool> stopping{false};
  std::thread forwarder{[&] {
    auto forwarded = stops;
    forwarded.insert(forwarded.end(), ignored.begin(), ignored.end());
    auto set = lifeboat::signal_set(forwarded);
    bool interrupted = false;
    for (;;) {
      int signo = 0;
      if (::sigwait(&set, &signo) != 0) continue;
      if (signo == SIGUSR2 && stopping) return;  // our own stop request
      if (job.is_ignored(signo)) {
        lifeboat::log(lifeboat::log_level::warning, "launch",
                      lifeboat::ignored_signal_message(signo));
        continue;
      }
      if (signo == SIGHUP) {
        lifeboat::log(lifeboat::log_level::info, "launch",
                      "SIGHUP received (the terminal hung up?); sending SIGTERM to every worker");
        forward(SIGTERM);
        continue;
      }
      // A second SIGINT (Ctrl-C again) is a person who will not wait for a
      // worker that ignores SIGINT or is stuck where no signal reaches its
      // code (a hung collective). A repeated SIGTERM is only forwarded: a
      // platform may send it again while the workers save.
      if (signo == SIGINT && interrupted) {
        lifeboat::log(lifeboat::log_level::warning, "launch",
                      "SIGINT received again; killing every worker");
        group.kill_all();
        continue;
      }
      interrupted = interrupted || signo == SIGINT;
      lifeboat::log(lifeboat::log_level::info, "launch", lifeboat::signal_name(signo),
                    " received; forwarding to every worker");
      forward(signo);
    }
  }};

  lifeboat::apps::node_context ctx{opts, group, received_signal, forwarded_at_ns};
  int exit_code = 0;
  if (!opts.multi_node())
    exit_code = run_single_node(opts, group, received_signal, forwarded_at_ns, service, *watcher);
  else if (hosts_service)
    exit_code = lifeboat::apps::run_node_zero(ctx, std::move(links), service, *watcher);
  else
    exit_code = lifeboat::apps::run_other_node(ctx, *link_to_zero);
  // A job that ends otherwise than done (to be restarted, failed, stopped)
  // leaves nothing behind: on a host that stays (no container or cgroup ends
  // with the launcher) a pool worker of a killed worker would keep its GPU
  // memory and ports from the launcher's next run. A job done may have
  // started something meant to outlive it (an upload of the final model).
  if (exit_code != 0)
    group.end_left_behind();
  else if (auto left = lifeboat::apps::worker_group::count_left_behind(); left > 0)
    say(std::to_string(left) +
        " process(es) that the workers left behind go on: every worker exited 0");

  stopping = true;
  ::pthread_kill(forwarder.native_handle(), SIGUSR2);
  forwarder.join();
  lifeboat::stop_status_endpoint(status_endpoint);
  stop_service();
  return exit_code;
}
