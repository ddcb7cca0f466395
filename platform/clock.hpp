#pragma once

#include <chrono>
#include <cstdint>

namespace lifeboat {

/// Wall-clock milliseconds since the Unix epoch: deadlines cross processes and
/// machines, so they are wall-clock; durations inside a process use steady_clock.
int64_t unix_now_ms();

/// Wall-clock microseconds since the Unix epoch, for log lines that workers on
/// one host (or with synchronised clocks) line up into one timeline.
int64_t unix_now_us();

/// Milliseconds from now until `deadline_unix_ms` (negative when it has passed).
std::chrono::milliseconds until(int64_t deadline_unix_ms);

}  // namespace lifeboat
