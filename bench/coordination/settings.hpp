#pragma once

// coordination_bench's settings (what is measured, where, and the deadlines
// that keep every wait bounded) and the small helpers its parts share.
// Everything here is constant or stateless, so safe from any thread.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "bench/loopback.hpp"
#include "messages/log.hpp"

namespace lifeboat::bench::coordination_bench {

using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

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

inline double ms_of(int64_t ns) { return static_cast<double>(ns) / 1e6; }

inline int remaining_ms(clock_type::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

// Workers are quiet unless LIFEBOAT_LOG_LEVEL says otherwise: joins and leaves
// would bury the table.
inline void quiet_logs() {
  if (std::getenv("LIFEBOAT_LOG_LEVEL") == nullptr)
    lifeboat::set_log_level(lifeboat::log_level::warning);
}

}  // namespace lifeboat::bench::coordination_bench
