#pragma once

// coordination_bench's measured scenarios against the coordination service:
// the fan-out get and the barrier, for one N.

#include <string>
#include <vector>

#include <caf/actor_system.hpp>

namespace lifeboat::bench::coordination_bench {

struct sweep_result {
  std::vector<double> fanout_ms;       // one per worker and round
  std::vector<double> fanout_last_ms;  // the slowest worker of each round
  std::vector<double> barrier_ms;      // one per round
};

// Hosts a service in `sys`, joins it as rank 0, starts N kv workers (this
// program, `self`, again) and measures the fan-out and barrier rounds; the
// service and the workers are gone when it returns. Throws bench_error.
sweep_result sweep(caf::actor_system& sys, const std::string& self, int n);

}  // namespace lifeboat::bench::coordination_bench
