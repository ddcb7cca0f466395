// The handler API's two costs, each beside its reference measured in the same run:
//   hot path: step_completed() while no notice is active  vs  an empty, not
//             inlined function call (Google Benchmark, medians of repetitions);
//   notice to agreement: a SIGTERM to one of N worker processes until every
//             worker has logged the agreed step, N = 2, 8, 16 (the step itself
//             is not in it: a worker's step takes 1 ms and is not waited for)
//             vs  the exchange floor: the two fan-outs of any agreement on
//             max + 1 (a query to all, every answer back, the decision to
//             all) as single bytes over raw TCP between this process and N
//             processes that each step a 1 ms loop like the workers, until
//             the last of them has the decision (each reports its
//             steady_clock, CLOCK_MONOTONIC, which compares across
//             processes). No runtime, no signal: what this host charges
//             before lifeboat adds anything. A second floor has the same
//             workers answer through a CAF 0.17 broker on the middleman's
//             I/O thread, with lifeboat's actor system configuration, as
//             lifeboat's agent does: what the transport lifeboat is built on
//             charges before its protocol adds anything. The floors are warm (the first
//             exchanges of their fresh processes, which page in code, are not
//             counted); the agreement is the first of its workers' lives, as
//             a real notice's is. Below each row, the CPU the workers used
//             from just before the signal until the last agreement was read,
//             trainers' step loops apart from lifeboat's threads, beside
//             the CPU the host had in that time, and where lifeboat's went:
//             rank 0's CAF threads (its I/O thread runs its agent and
//             resolver, and the service every message of the round passes),
//             the other workers' CAF threads, and the checkpoint writers' I/O
//             threads (the workers that got the decision first start saving
//             at once, on the cores the others still need to hear it); and
//             how long the CAF threads were ready to run but waited for a
//             core. The quartiles beside the median show how far the rounds
//             of one run spread.
// Above the rows, how busy the host's CPU was with no worker running, just
// before the rounds and just after them: other load on the host slows every
// row, and nothing else in the output would show it.
// Last, the N = 16 agreement phase by phase: more rounds with the workers
// logging at debug level, and when each phase ended (the notice at the
// leader, the query and the commit at the first and last follower, the
// reports at the leader): where the time from the signal went.
// The workers are this program, started again with --worker DIR,
// --floor-worker PORT or --caf-floor-worker PORT (child_process ends them
// with the bench).
// The parts: handler/settings.hpp (targets, sizes, timeouts),
// handler/hot_path.cpp, handler/agreement.cpp (the workers and a round),
// handler/workers_cpu.cpp (the CPU readings), handler/floor.cpp (the floors),
// handler/phases.cpp (the phase-by-phase rounds).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench/handler/agreement.hpp"
#include "bench/handler/floor.hpp"
#include "bench/handler/hot_path.hpp"
#include "bench/handler/phases.hpp"
#include "bench/handler/settings.hpp"
#include "bench/handler/workers_cpu.hpp"

using namespace lifeboat::bench::handler_bench;

int main(int argc, char** argv) {
  if (argc == 3 && std::string{argv[1]} == "--worker") return run_worker(argv[2]);
  if (argc == 3 && std::string{argv[1]} == "--floor-worker")
    return run_floor_worker(static_cast<uint16_t>(std::stoi(argv[2])));
  if (argc == 3 && std::string{argv[1]} == "--caf-floor-worker")
    return run_caf_floor_worker(static_cast<uint16_t>(std::stoi(argv[2])));
  for (const char* var : {"LIFEBOAT_RANK", "LIFEBOAT_WORLD_SIZE", "LIFEBOAT_COORDINATOR",
                          "TF_CONFIG", "RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS"})
    ::unsetenv(var);

  benchmark::Initialize(&argc, argv);
  median_reporter reporter;
  run_hot_path(reporter);

  struct agreement_samples {
    int n;
    std::vector<double> ours;
    std::vector<double> floor;
    std::vector<double> caf_floor;
    std::vector<workers_cpu> cpu;
  };
  std::vector<agreement_samples> agreement;
  auto self = fs::read_symlink("/proc/self/exe").string();
  double busy_before = host_busy_share(host_load_window);
  for (auto [n, rounds] : agreement_sizes) {
    agreement_samples row{n, {}, {}, {}, {}};
    for (int round = 0; round < rounds; ++round) {
      auto result = agreement_round(self, n, round);
      row.ours.push_back(result.ms);
      row.cpu.push_back(result.cpu);
    }
    row.floor = floor_rounds(self, "--floor-worker", n);
    row.caf_floor = floor_rounds(self, "--caf-floor-worker", n);
    agreement.push_back(std::move(row));
  }
  double busy_after = host_busy_share(host_load_window);

  double ours = reporter.median("bm_step_completed");
  double floor = reporter.median("bm_empty_call");
  std::printf("\nhandler_bench\n");
  std::printf(
      "hot path step_completed  %6.2f ns median; empty call %6.2f ns; ratio %.2fx "
      "(target <= %.0f ns: %s)\n",
      ours, floor, ours / floor, hot_path_target_ns,
      ours <= hot_path_target_ns ? "met" : "NOT met");
  auto percent = [](double share) {
    return share < 0 ? std::string{"unknown"} : std::to_string(std::lround(share * 100)) + "%";
  };
  std::printf(
      "host CPU busy with no worker running (/proc/stat over %lld ms): %s before the rounds, %s "
      "after; any other load slows every row below\n",
      static_cast<long long>(host_load_window.count()), percent(busy_before).c_str(),
      percent(busy_after).c_str());
  for (const auto& row : agreement) {
    double p50 = percentile(row.ours, 0.5);
    double floor_p50 = percentile(row.floor, 0.5);
    std::printf(
        "notice to agreement N=%-2d  p50 %7.2f ms  (p25 %.2f, p75 %.2f)  max %7.2f ms  "
        "(%zu rounds); exchange floor p50 %5.2f ms (%zu rounds); ratio %.1fx%s\n",
        row.n, p50, percentile(row.ours, 0.25), percentile(row.ours, 0.75),
        percentile(row.ours, 1.0), row.ours.size(), floor_p50, row.floor.size(), p50 / floor_p50,
        row.n == agreement_target_n
            ? (p50 <= agreement_target_ms ? "  target <= 2 ms: met" : "  target <= 2 ms: NOT met")
            : "");
    double caf_p50 = percentile(row.caf_floor, 0.5);
    std::printf("    the exchange through CAF brokers p50 %5.2f ms (%zu rounds): %.1fx the floor\n",
                caf_p50, row.caf_floor.size(), caf_p50 / floor_p50);
    auto cpu_p50 = [&](double workers_cpu::*field) {
      std::vector<double> xs;
      for (auto& c : row.cpu) xs.push_back(c.*field);
      return percentile(xs, 0.5);
    };
    std::printf(
        "    CPU the workers used in it (p50): trainer step loops %.2f ms, lifeboat threads %.2f "
        "ms, of the p50 x %u cores = %.2f ms this host had\n",
        cpu_p50(&workers_cpu::trainer_ms), cpu_p50(&workers_cpu::lifeboat_ms),
        std::thread::hardware_concurrency(), p50 * std::thread::hardware_concurrency());
    std::printf(
        "      of lifeboat's: rank 0's CAF threads (agent, resolver and service) %.2f ms, the "
        "CAF threads of ranks 1 to %d %.2f ms, checkpoint writers' I/O threads %.2f ms\n",
        cpu_p50(&workers_cpu::leader_caf_ms), row.n - 1, cpu_p50(&workers_cpu::follower_caf_ms),
        cpu_p50(&workers_cpu::saver_ms));
    std::printf(
        "      ready to run but waiting for a core (p50): rank 0's CAF threads %.2f ms, the CAF "
        "threads of ranks 1 to %d %.2f ms in all\n",
        cpu_p50(&workers_cpu::leader_caf_wait_ms), row.n - 1,
        cpu_p50(&workers_cpu::follower_caf_wait_ms));
  }
  print_phases(self);
  return 0;
}
