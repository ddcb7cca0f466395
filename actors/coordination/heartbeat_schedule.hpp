#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace lifeboat {

/// A worker sends this many heartbeats per heartbeat timeout, so that all
/// but the last may be late or lost before the service declares it lost.
constexpr int64_t heartbeats_per_timeout = 4;

/// Heartbeats go out at least once a second, whatever the timeout: the
/// worker's step and phase ride on them.
constexpr std::chrono::milliseconds max_heartbeat_interval{1000};

/// The shortest heartbeat timeout a service or a worker accepts. Below it a
/// healthy worker whose process is descheduled for a few ms (a busy host, a
/// sanitizer) would be declared lost, and a timeout of a few ms would send
/// heartbeats in a loop.
constexpr std::chrono::milliseconds min_heartbeat_timeout{100};

/// How often a worker must send heartbeats to a service whose timeout is
/// `timeout`. The service tells each worker in its JoinReply, so a worker
/// configured with a longer timeout than its service's is not lost by it.
constexpr std::chrono::milliseconds heartbeat_interval_for(std::chrono::milliseconds timeout) {
  return std::min(max_heartbeat_interval, timeout / heartbeats_per_timeout);
}

}  // namespace lifeboat
