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
// The parts: coordination/settings.hpp (what is measured, the deadlines),
// coordination/workers.cpp (the worker processes), coordination/worker_group.cpp
// (the bench's handle on them), coordination/sweep.cpp (the service and the
// fan-out and barrier rounds), coordination/tcp_floor.cpp (the floor).
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>

#include "actors/system_config.hpp"
#include "bench/coordination/settings.hpp"
#include "bench/coordination/sweep.hpp"
#include "bench/coordination/tcp_floor.hpp"
#include "bench/coordination/workers.hpp"
#include "bench/proc_stats.hpp"

namespace {

using namespace lifeboat::bench;
using namespace lifeboat::bench::coordination_bench;

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
