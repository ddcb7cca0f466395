#pragma once

#include <cstdint>

namespace lifeboat {

/// A gap between a process's periodic ticks longer than their period by
/// this much shows that the process itself did not run meanwhile.
constexpr int64_t stall_threshold_ms = 2000;

/// Tells a periodic tick that came late because this process did not run
/// (stopped by SIGSTOP or Ctrl-Z, its host paused or starved) from one that
/// came on time. A peer's silence over such a stall is not the peer's: a
/// whole job stopped with Ctrl-Z for 15 s and continued with `fg` had every
/// worker declared lost by its coordination service the moment the service
/// ran again ("no heartbeat for 15947 ms"), and the job failed for nothing.
///
/// A plain value: the coordination service's actor, each agent and each
/// link between launchers (apps/node_link) own one. Not thread-safe.
class stall_watch {
 public:
  /// A tick at `now_ms` of ticks meant to come every `period_ms`: how long
  /// this process did not run since the last tick beyond that period, or 0
  /// when the gap is within the period and stall_threshold_ms (the first
  /// tick is never late).
  int64_t stalled_ms(int64_t now_ms, int64_t period_ms);

 private:
  int64_t last_tick_ms_ = -1;
};

}  // namespace lifeboat
