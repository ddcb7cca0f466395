#pragma once

// handler_bench's notice-to-agreement rounds: the worker process (this
// program with --worker DIR) and one round of N of them, signalled.

#include <cstdint>
#include <string>
#include <vector>

#include "bench/handler/workers_cpu.hpp"

namespace lifeboat::bench::handler_bench {

// --worker DIR: a worker of an agreement round; it trains until the runtime
// ends it with the restart code.
int run_worker(const std::string& dir);

struct round_result {
  double ms = 0;        // until the last worker logged the agreed step
  double ready_ms = 0;  // from the first worker's start until the last was ready (joined)
  workers_cpu cpu;      // used by all workers in that time
  // For the phases: when the signal was sent, and each worker's lines.
  int64_t signal_unix_us = 0;
  std::vector<std::vector<std::string>> lines;
};

// One round: N workers train; the last rank gets a SIGTERM. `log_level` is
// what the workers log: "info" for the figure, "debug" for the phases.
// `self` is this program; the bench ends (die) if the round fails.
round_result agreement_round(const std::string& self, int n, int round,
                             const char* log_level = "info");

}  // namespace lifeboat::bench::handler_bench
