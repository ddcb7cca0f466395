#pragma once

// coordination_bench's floor: raw TCP ping-pong with one echo worker.

#include <string>
#include <vector>

namespace lifeboat::bench::coordination_bench {

// Round-trip times in ms of raw TCP ping-pong with one child process (this
// program, `self`, started as an echo worker). Throws bench_error.
std::vector<double> tcp_floor(const std::string& self);

}  // namespace lifeboat::bench::coordination_bench
