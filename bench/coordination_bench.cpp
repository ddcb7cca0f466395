// Coordination service latency on 127.0.0.1 with real processes, each figure
// beside the loopback floor measured in the same run:
//   fan-out: N workers wait in a blocking get on a fresh key (each reports
//            "waiting" only after a try_get round trip behind its get, so the
//            get is registered at the service), then this process inserts it;
//            one sample per worker = the worker's steady_clock when its get
//            returned - ours just before the insert ("last" = the slowest
//            worker of each round);
//   barrier: N workers enter a fresh named barrier; one sample per round =
//            max(exit times) - max(entry times);
//   floor:   raw TCP ping-pong (64-byte messages, TCP_NODELAY) between this
//            process and one child, round-trip time;
// for N = 2, 8, 16 worker processes. The service is hosted in this process,
// which also joins as rank 0 to insert (world size N + 1; the barrier's
// participants are ranks 1..N). steady_clock is CLOCK_MONOTONIC, system-wide
// on Linux, so times taken in different processes compare. The workers are
// this program started again with --worker.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include "actors/coordination/coordination_client.hpp"
#include "actors/coordination/coordination_service.hpp"
#include "actors/system_config.hpp"
#include "bench/loopback.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "tests/support/child_process.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;
using lifeboat::test::child_process;
using namespace lifeboat::bench;

// What is measured.
constexpr std::array<int, 3> worker_counts = {2, 8, 16};
constexpr int warmup_rounds = 10;  // per N and measurement, not counted
constexpr int fanout_rounds = 1000;
constexpr int barrier_rounds = 1000;
constexpr int ping_warmup_rounds = 200;
constexpr int ping_rounds = 2000;
constexpr size_t ping_bytes = 64;
constexpr double fanout_target_ms = 2.0;
constexpr int fanout_target_n = 16;

// Where, and the deadlines that keep every wait bounded.
constexpr const char* bench_host = loopback_host;
constexpr const char* bench_token = "coordination-bench-token";
constexpr auto heartbeat_timeout = 10s;
constexpr auto join_timeout = 20s;
constexpr auto request_timeout = 5s;              // a worker's get and barrier
constexpr auto worker_ready_timeout = 30s;        // start and join
constexpr auto worker_line_timeout = 10s;         // a worker's answer to one command
constexpr auto worker_exit_timeout = 5s;          // after "exit", before SIGKILL
constexpr auto ping_timeout = 5s;                 // accept, and each round trip
constexpr const char* fence_key = "bench/fence";  // never inserted

struct bench_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch())
      .count();
}

double ms_of(int64_t ns) { return static_cast<double>(ns) / 1e6; }

int remaining_ms(clock_type::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

// Workers are quiet unless LIFEBOAT_LOG_LEVEL says otherwise: joins and leaves
// would bury the table.
void quiet_logs() {
  if (std::getenv("LIFEBOAT_LOG_LEVEL") == nullptr)
    lifeboat::set_log_level(lifeboat::log_level::warning);
}

// -- worker side ------------------------------------------------------------

// --worker echo PORT: echoes ping_bytes messages until EOF.
int run_echo_worker(uint16_t port) {
  auto conn = connect_loopback(port);
  if (conn.fd < 0) {
    std::perror("coordination_bench echo worker: connect");
    return 1;
  }
  std::array<char, ping_bytes> buf{};
  // The parent closing the connection (or going silent) ends the loop.
  while (transfer_all(conn.fd, buf.data(), buf.size(), false, ping_timeout) &&
         transfer_all(conn.fd, buf.data(), buf.size(), true, ping_timeout)) {
  }
  return 0;
}

// --worker kv PORT RANK WORLD_SIZE: joins, prints "joined", then
// answers one stdin line with stdout lines:
//   get KEY       -> "waiting" once the get is registered at the service,
//                    then "got NS" (steady_clock when the get returned)
//   barrier NAME  -> "barrier ENTRY_NS EXIT_NS" (participants: ranks 1..N)
//   exit          -> leaves and exits
// Any failure answers "err WHAT".
int run_kv_worker(uint16_t port, int rank, int world_size) {
  quiet_logs();
  lifeboat::agent_config cfg;
  cfg.host = bench_host;
  cfg.port = port;
  cfg.rank = rank;
  cfg.world_size = world_size;
  cfg.token = bench_token;
  cfg.join_timeout = join_timeout;
  lifeboat::system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  auto client = lifeboat::coordination_client::connect(sys, cfg);
  if (!client) {
    std::cout << "err join: " << lifeboat::describe(client.error()) << std::endl;
    return 1;
  }
  std::vector<int32_t> participants;
  for (int32_t r = 1; r < world_size; ++r) participants.push_back(r);
  std::cout << "joined" << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in{line};
    std::string cmd;
    std::string name;
    in >> cmd >> name;
    if (cmd == "get") {
      auto handle = (*client)->get_async(name, request_timeout);
      if (!handle) {
        std::cout << "err get_async: " << lifeboat::describe(handle.error()) << std::endl;
        continue;
      }
      // The service handles a connection's frames in order: once this
      // try_get is answered, the get above is registered there.
      auto fence = (*client)->try_get(fence_key);
      if (!fence) {
        (*client)->cancel(*handle);
        (*client)->wait(*handle);
        std::cout << "err fence: " << lifeboat::describe(fence.error()) << std::endl;
        continue;
      }
      std::cout << "waiting" << std::endl;
      auto value = (*client)->wait(*handle);
      auto done = now_ns();
      if (value)
        std::cout << "got " << done << std::endl;
      else
        std::cout << "err get: " << lifeboat::describe(value.error()) << std::endl;
    } else if (cmd == "barrier") {
      auto entry = now_ns();
      auto err = (*client)->barrier(name, request_timeout, participants);
      auto exit = now_ns();
      if (err)
        std::cout << "err barrier: " << lifeboat::describe(err) << std::endl;
      else
        std::cout << "barrier " << entry << " " << exit << std::endl;
    } else if (cmd == "exit") {
      break;
    } else {
      std::cout << "err unknown command: " << line << std::endl;
    }
  }
  (*client)->leave();
  return 0;
}

// -- bench side -------------------------------------------------------------

// N kv workers, joined; every one is killed and reaped when this goes away.
class worker_group {
 public:
  worker_group(const std::string& self, uint16_t port, int n) {
    for (int i = 0; i < n; ++i) {
      auto child = std::make_unique<child_process>(
          std::vector<std::string>{self, "--worker", "kv", std::to_string(port),
                                   std::to_string(i + 1), std::to_string(n + 1)});
      if (!child->started()) throw bench_error("cannot start worker " + std::to_string(i + 1));
      workers_.push_back(std::move(child));
    }
    expect_all("joined", worker_ready_timeout);
  }

  worker_group(const worker_group&) = delete;
  worker_group& operator=(const worker_group&) = delete;

  // A clean exit first, unless a failure is unwinding; child_process's
  // destructor kills and reaps whoever is left.
  ~worker_group() {
    if (std::uncaught_exceptions() > 0) return;
    for (auto& w : workers_) w->send_line("exit");
    auto deadline = clock_type::now() + worker_exit_timeout;
    for (auto& w : workers_) w->wait_exit(std::chrono::milliseconds(remaining_ms(deadline)));
  }

  size_t size() const { return workers_.size(); }

  void send_all(const std::string& line) {
    for (size_t i = 0; i < workers_.size(); ++i)
      if (!workers_[i]->send_line(line))
        throw bench_error("worker " + std::to_string(i + 1) + " is gone (sending '" + line + "')");
  }

  // One line from every worker, each starting with `word`; the rest of each.
  std::vector<std::string> expect_all(const std::string& word,
                                      std::chrono::milliseconds timeout = worker_line_timeout) {
    auto deadline = clock_type::now() + timeout;
    std::vector<std::string> rest;
    for (size_t i = 0; i < workers_.size(); ++i) {
      auto who = "worker " + std::to_string(i + 1) + " of " + std::to_string(workers_.size());
      auto line = workers_[i]->read_line(std::chrono::milliseconds(remaining_ms(deadline)));
      if (!line)
        throw bench_error(who + (workers_[i]->at_eof() ? " exited" : " did not answer in time") +
                          " (expected '" + word + "')");
      if (line->compare(0, word.size(), word) != 0)
        throw bench_error(who + " said '" + *line + "' (expected '" + word + "')");
      rest.push_back(line->substr(std::min(line->size(), word.size() + 1)));
    }
    return rest;
  }

 private:
  std::vector<std::unique_ptr<child_process>> workers_;
};

int64_t parse_ns(const std::string& text) {
  try {
    return std::stoll(text);
  } catch (const std::exception&) {
    throw bench_error("not a time: '" + text + "'");
  }
}

// The service, gone when this is.
struct service_guard {
  caf::actor actor;
  ~service_guard() { caf::anon_send_exit(actor, caf::exit_reason::user_shutdown); }
};

struct sweep_result {
  std::vector<double> fanout_ms;       // one per worker and round
  std::vector<double> fanout_last_ms;  // the slowest worker of each round
  std::vector<double> barrier_ms;      // one per round
};

sweep_result sweep(caf::actor_system& sys, const std::string& self, int n) {
  lifeboat::service_config scfg;
  scfg.host = bench_host;
  scfg.world_size = n + 1;
  scfg.token = bench_token;
  scfg.heartbeat_timeout = heartbeat_timeout;
  auto spawned = lifeboat::spawn_coordination_service(sys, scfg);
  if (!spawned) throw bench_error("service: " + lifeboat::describe(spawned.error()));
  service_guard service{spawned->first};
  auto port = spawned->second;

  lifeboat::agent_config acfg;
  acfg.host = bench_host;
  acfg.port = port;
  acfg.rank = 0;
  acfg.world_size = n + 1;
  acfg.token = bench_token;
  acfg.join_timeout = join_timeout;
  auto client = lifeboat::coordination_client::connect(sys, acfg);
  if (!client) throw bench_error("parent join: " + lifeboat::describe(client.error()));

  worker_group workers{self, port, n};
  sweep_result result;
  auto tag = std::to_string(n);
  for (int round = 0; round < warmup_rounds + fanout_rounds; ++round) {
    auto key = "bench/fanout/" + tag + "/" + std::to_string(round);
    workers.send_all("get " + key);
    workers.expect_all("waiting");
    auto start = now_ns();
    if (auto err = (*client)->insert(key, "x"))
      throw bench_error("insert " + key + ": " + lifeboat::describe(err));
    auto got = workers.expect_all("got");
    if (round < warmup_rounds) continue;
    int64_t last = 0;
    for (auto& text : got) {
      auto latency = parse_ns(text) - start;
      if (latency < 0) throw bench_error("a get returned before the insert began");
      last = std::max(last, latency);
      result.fanout_ms.push_back(ms_of(latency));
    }
    result.fanout_last_ms.push_back(ms_of(last));
  }
  for (int round = 0; round < warmup_rounds + barrier_rounds; ++round) {
    workers.send_all("barrier bench/barrier/" + tag + "/" + std::to_string(round));
    auto times = workers.expect_all("barrier");
    if (round < warmup_rounds) continue;
    int64_t last_entry = 0;
    int64_t last_exit = 0;
    for (auto& text : times) {
      auto space = text.find(' ');
      if (space == std::string::npos) throw bench_error("barrier times: '" + text + "'");
      last_entry = std::max(last_entry, parse_ns(text.substr(0, space)));
      last_exit = std::max(last_exit, parse_ns(text.substr(space + 1)));
    }
    if (last_exit < last_entry) throw bench_error("a barrier was left before all entered");
    result.barrier_ms.push_back(ms_of(last_exit - last_entry));
  }
  return result;
}

// Round-trip times of raw TCP ping-pong with one child process.
std::vector<double> tcp_floor(const std::string& self) {
  uint16_t port = 0;
  auto listener = listen_loopback(1, port);
  if (listener.fd < 0)
    throw bench_error(std::string{"floor: cannot listen: "} + std::strerror(errno));
  child_process echo{{self, "--worker", "echo", std::to_string(port)}};
  if (!echo.started()) throw bench_error("floor: cannot start the echo process");
  auto conn = accept_within(listener.fd, ping_timeout);
  if (conn.fd < 0) throw bench_error("floor: the echo process did not connect in time");
  std::array<char, ping_bytes> buf{};
  std::vector<double> rtt_ms;
  for (int round = 0; round < ping_warmup_rounds + ping_rounds; ++round) {
    auto start = now_ns();
    if (!transfer_all(conn.fd, buf.data(), buf.size(), true, ping_timeout) ||
        !transfer_all(conn.fd, buf.data(), buf.size(), false, ping_timeout))
      throw bench_error("floor: ping-pong failed or timed out");
    auto rtt = now_ns() - start;
    if (round >= ping_warmup_rounds) rtt_ms.push_back(ms_of(rtt));
  }
  ::close(conn.fd);  // the echo process sees EOF and exits
  conn.fd = -1;
  if (!echo.wait_exit(worker_exit_timeout)) throw bench_error("floor: echo process did not exit");
  return rtt_ms;
}

// Nearest-rank percentile, p in (0, 1].
double percentile(std::vector<double> xs, double p) {
  if (xs.empty()) return 0.0;
  std::sort(xs.begin(), xs.end());
  auto rank = static_cast<size_t>(p * static_cast<double>(xs.size()) + 0.999999);
  return xs[std::clamp<size_t>(rank, 1, xs.size()) - 1];
}

void print_row(const char* what, int n, const std::vector<double>& samples, double floor_p50) {
  auto p50 = percentile(samples, 0.5);
  std::printf("%-16s %3d %8.3f %8.3f %13.3f %17.1f\n", what, n, p50, percentile(samples, 0.99),
              floor_p50, p50 / floor_p50);
}

int run_bench(const std::string& self) {
  auto start = clock_type::now();
  quiet_logs();
  auto floor = tcp_floor(self);
  std::vector<std::pair<int, sweep_result>> sweeps;
  {
    lifeboat::system_config sys_cfg;
    caf::actor_system sys{sys_cfg};
    for (auto n : worker_counts) sweeps.emplace_back(n, sweep(sys, self, n));
  }
  auto floor_p50 = percentile(floor, 0.5);
  std::printf(
      "\ncoordination_bench: 127.0.0.1, %d fan-out and %d barrier rounds per N after %d warm-up; "
      "floor: %d TCP round trips of %zu bytes\n",
      fanout_rounds, barrier_rounds, warmup_rounds, ping_rounds, ping_bytes);
  std::printf("%-16s %3s %8s %8s %13s %17s\n", "what", "N", "p50 ms", "p99 ms", "floor p50 ms",
              "ratio(p50/floor)");
  print_row("tcp ping-pong", 1, floor, floor_p50);
  for (auto& [n, r] : sweeps) print_row("fan-out get", n, r.fanout_ms, floor_p50);
  for (auto& [n, r] : sweeps) print_row("fan-out (last)", n, r.fanout_last_ms, floor_p50);
  for (auto& [n, r] : sweeps) print_row("barrier", n, r.barrier_ms, floor_p50);
  for (auto& [n, r] : sweeps)
    if (n == fanout_target_n)
      std::printf("target <= %.0f ms p50 at N = %d: %s\n", fanout_target_ms, fanout_target_n,
                  percentile(r.fanout_ms, 0.5) <= fanout_target_ms ? "met" : "NOT met");
  std::printf("ran in %.1f s\n", std::chrono::duration<double>(clock_type::now() - start).count());
  return 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: coordination_bench\n"
               "       coordination_bench --worker kv PORT RANK WORLD_SIZE\n"
               "       coordination_bench --worker echo PORT\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (!args.empty() && args[0] == "--worker") {
      if (args.size() == 5 && args[1] == "kv")
        return run_kv_worker(static_cast<uint16_t>(std::stoi(args[2])), std::stoi(args[3]),
                             std::stoi(args[4]));
      if (args.size() == 3 && args[1] == "echo")
        return run_echo_worker(static_cast<uint16_t>(std::stoi(args[2])));
      return usage();
    }
    if (!args.empty()) return usage();
    // A dead worker's pipe must fail the write, not kill the bench.
    std::signal(SIGPIPE, SIG_IGN);
    return run_bench(std::filesystem::read_symlink("/proc/self/exe").string());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coordination_bench: error: %s\n", e.what());
    return 1;
  }
}
