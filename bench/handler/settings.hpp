#pragma once

// handler_bench's settings (targets, sizes, timeouts, the workers' marker
// lines) and the helpers every part uses: failing the bench, percentiles.
// Everything here is constant or stateless.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace lifeboat::bench::handler_bench {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr double hot_path_target_ns = 20.0;
constexpr double agreement_target_ms = 2.0;
constexpr int agreement_target_n = 16;
constexpr auto worker_step_time = 1ms;
constexpr auto worker_ready_timeout = 60s;
constexpr auto agreement_timeout = 20s;
constexpr auto worker_exit_timeout = 30s;
constexpr auto floor_timeout = 10s;        // each wait of the floor's exchange
constexpr int floor_warmup_rounds = 5;     // per N, not counted
constexpr int floor_measured_rounds = 30;  // per N; cheap next to the agreement rounds
constexpr auto host_load_window = 300ms;
constexpr size_t worker_state_bytes = 64 * 1024;
constexpr const char* agreed_marker = "agreed to save at step";
constexpr const char* ready_line = "ready";

struct sizes {
  int workers;
  int rounds;
};
// Each round starts every process anew, so rounds are few; but at N = 16 the
// median of eight rounds ranged from 1.83 to 2.91 ms in six runs on one
// host, on both sides of the target: thirty rounds there.
constexpr sizes agreement_sizes[] = {{2, 10}, {8, 10}, {16, 30}};

[[noreturn]] inline void die(const std::string& what) {
  std::fprintf(stderr, "handler_bench: %s\n", what.c_str());
  std::exit(1);
}

inline double percentile(std::vector<double> xs, double p) {
  std::sort(xs.begin(), xs.end());
  auto index = static_cast<size_t>(p * (xs.size() - 1) + 0.5);
  return xs[index];
}

}  // namespace lifeboat::bench::handler_bench
