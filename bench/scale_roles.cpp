#include "bench/scale_roles.hpp"

#include <chrono>
#include <iostream>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/atoms.hpp"
#include "actors/coordination/coordination_service.hpp"
#include "actors/system_config.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "messages/status.pb.h"
#include "runtime/io_thread_policy.hpp"
#include "tests/support/simulated_workers.hpp"

namespace lifeboat::bench {

namespace {

using namespace std::chrono_literals;

constexpr const char* scale_token = "scale-bench-token";
constexpr size_t join_threads = 32;
constexpr size_t leave_threads = 16;
constexpr auto wait_bound = 60s;  // any one wait of a command
constexpr int64_t barrier_timeout_ms = 60000;
constexpr int errc_test_failure = 1;

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The roles are quiet unless LIFEBOAT_LOG_LEVEL says otherwise: a thousand
// joins would bury the table.
void quiet_logs() {
  if (std::getenv("LIFEBOAT_LOG_LEVEL") == nullptr) set_log_level(log_level::error);
}

void warn_fd_limit() {
  if (auto err = sim::raise_fd_limit()) std::cerr << describe(err) << std::endl;
}

}  // namespace

int run_service_role(int world_size, int heartbeat_timeout_ms) {
  // The service's warnings are few and say why a rank was lost.
  if (std::getenv("LIFEBOAT_LOG_LEVEL") == nullptr) set_log_level(log_level::warning);
  warn_fd_limit();
  system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  service_config cfg;
  cfg.world_size = world_size;
  cfg.token = scale_token;
  cfg.heartbeat_timeout = std::chrono::milliseconds{heartbeat_timeout_ms};
  auto spawned = spawn_coordination_service(sys, cfg);
  if (!spawned) {
    std::cout << "err " << describe(spawned.error()) << std::endl;
    return 1;
  }
  auto service = spawned->first;
  std::cout << "port " << spawned->second << std::endl;
  // One status request; the reply comes after whatever the service took before it.
  auto status = [&](wire::ActorStatus& out) {
    caf::scoped_actor self{sys};
    caf::error failed;
    self->request(service, wait_bound, status_atom::value)
        .receive([&](wire::ActorStatus& st) { out = std::move(st); },
                 [&](caf::error& err) { failed = std::move(err); });
    return failed;
  };
  std::string line;
  while (std::getline(std::cin, line) && line != "exit") {
    wire::ActorStatus st;
    auto start = steady_ns();
    if (line == "reset") caf::anon_send(service, reset_atom::value);
    if (line != "reset" && line != "status") {
      std::cout << "err unknown command: " << line << std::endl;
    } else if (auto err = status(st)) {
      std::cout << "err status: " << describe(err) << std::endl;
    } else if (line == "reset") {
      std::cout << "reset" << std::endl;
    } else {
      std::cout << "status " << st.workers_size() << " " << st.ByteSizeLong() << " "
                << steady_ns() - start << std::endl;
    }
  }
  caf::anon_send_exit(service, caf::exit_reason::user_shutdown);
  return 0;
}

int run_sim_role(uint16_t port, int world_size, int first_rank, int count, int heartbeat_ms) {
  quiet_logs();
  // A reset of the service between two error rounds makes every agent log
  // that the service is lost: a thousand lines that say nothing. The answers
  // on stdout carry every failure.
  if (std::getenv("LIFEBOAT_LOG_LEVEL") == nullptr &&
      std::freopen("/dev/null", "w", stderr) == nullptr)
    return 1;
  warn_fd_limit();
  system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  // The I/O thread's policy of a real worker that does not host the service.
  run_io_thread_as_batch(sys, "scale_bench");
  sim::worker_options opts;
  opts.port = port;
  opts.world_size = world_size;
  opts.token = scale_token;
  opts.heartbeat_interval = std::chrono::milliseconds{heartbeat_ms};
  std::vector<int32_t> ranks(static_cast<size_t>(count));
  std::iota(ranks.begin(), ranks.end(), first_rank);
  std::unique_ptr<sim::worker_group> group;
  std::cout << "ready" << std::endl;
  auto leader = [&] { return group->index_of(0); };
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in{line};
    std::string cmd;
    in >> cmd;
    if (cmd == "join" || cmd == "rejoin") {
      group.reset();
      group = std::make_unique<sim::worker_group>(sys, opts, ranks);
      auto err = group->join(join_threads);
      auto done = steady_ns();
      if (err)
        std::cout << "err join: " << describe(err) << std::endl;
      else
        std::cout << "joined " << done << std::endl;
    } else if (cmd == "arm") {
      group->arm();
      std::cout << "armed" << std::endl;
    } else if (cmd == "notice" || cmd == "report") {
      int32_t rank = 0;
      in >> rank;
      auto start = steady_ns();
      if (cmd == "notice") {
        group->notice(rank);
        std::cout << "noticed " << start << std::endl;
      } else {
        group->report_error(rank, errc_test_failure, "simulated error");
        std::cout << "reported " << start << std::endl;
      }
    } else if (cmd == "commits") {
      auto last = group->seen().await_commits(leader(), wait_bound);
      if (last)
        std::cout << "commits " << *last << std::endl;
      else
        std::cout << "err not every worker learned of the commit" << std::endl;
    } else if (cmd == "barrier") {
      std::string name;
      in >> name;
      group->enter_barrier(name, std::chrono::milliseconds{barrier_timeout_ms});
      auto times = group->seen().await_barrier(wait_bound);
      if (times)
        std::cout << "barrier " << times->last_entry_ns << " " << times->last_exit_ns << std::endl;
      else
        std::cout << "err barrier " << name << " failed or timed out" << std::endl;
    } else if (cmd == "failures") {
      int32_t rank = 0;
      int lost = 0;
      in >> rank >> lost;
      auto last = group->seen().await_failures(rank, lost != 0, group->index_of(rank), wait_bound);
      if (last)
        std::cout << "failures " << *last << std::endl;
      else
        std::cout << "err not every worker heard of rank " << rank
                  << "'s failure: " << group->seen().failures_seen() << std::endl;
    } else if (cmd == "leave") {
      auto err = group->leave(leave_threads);
      std::cout << (err ? "err leave: " + describe(err) : std::string{"left"}) << std::endl;
    } else if (cmd == "exit") {
      break;
    } else {
      std::cout << "err unknown command: " << line << std::endl;
    }
  }
  group.reset();
  return 0;
}

}  // namespace lifeboat::bench
