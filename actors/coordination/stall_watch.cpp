#include "actors/coordination/stall_watch.hpp"

namespace lifeboat {

int64_t stall_watch::stalled_ms(int64_t now_ms, int64_t period_ms) {
  auto previous = last_tick_ms_;
  last_tick_ms_ = now_ms;
  if (previous < 0) return 0;
  auto late_ms = now_ms - previous - period_ms;
  return late_ms > stall_threshold_ms ? late_ms : 0;
}

}  // namespace lifeboat
