#pragma once

// handler_bench's last part: the N = 16 agreement phase by phase, from the
// workers' debug lines.

#include <string>

namespace lifeboat::bench::handler_bench {

// Runs the phase rounds with workers of `self` and prints where the time from
// the signal went.
void print_phases(const std::string& self);

}  // namespace lifeboat::bench::handler_bench
