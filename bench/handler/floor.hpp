#pragma once

// handler_bench's exchange floors: the two fan-outs of an agreement as
// single bytes over raw TCP, and the same through CAF brokers, with worker
// processes that step like the real workers.

#include <cstdint>
#include <string>
#include <vector>

namespace lifeboat::bench::handler_bench {

// --floor-worker PORT: beside its trainer, the main thread takes
// part in exchanges until the bench hangs up: query in, answer out, decision
// in, then the steady_clock ticks at which the decision arrived out.
int run_floor_worker(uint16_t port);

// --caf-floor-worker PORT: --floor-worker's exchange through CAF.
int run_caf_floor_worker(uint16_t port);

// N floor workers, then exchanges with them: milliseconds from the first
// query until the last worker had the decision, one sample per exchange
// after the warm-up (the first exchanges of fresh processes page in code).
// `worker_flag` picks the kind of worker: --floor-worker or --caf-floor-worker.
std::vector<double> floor_rounds(const std::string& self, const char* worker_flag, int n);

}  // namespace lifeboat::bench::handler_bench
