// stall_watch: a tick later than its period by more than stall_threshold_ms
// is a stall of the process's own; ticks on time, or a little late (a busy
// machine), are none.
#include "actors/coordination/stall_watch.hpp"

#include <gtest/gtest.h>

namespace lifeboat {
namespace {

constexpr int64_t period_ms = 500;

TEST(stall_watch, ticks_on_time_or_a_little_late_are_no_stall) {
  stall_watch watch;
  EXPECT_EQ(watch.stalled_ms(1000, period_ms), 0);
  EXPECT_EQ(watch.stalled_ms(1500, period_ms), 0);
  EXPECT_EQ(watch.stalled_ms(1700, period_ms), 0);
  EXPECT_EQ(watch.stalled_ms(1700 + period_ms + stall_threshold_ms, period_ms), 0);
}

TEST(stall_watch, a_tick_far_past_its_period_gives_how_long_the_process_stood_still) {
  stall_watch watch;
  // The first tick has nothing to be late against, however late it is.
  EXPECT_EQ(watch.stalled_ms(100000, period_ms), 0);
  EXPECT_EQ(watch.stalled_ms(100000 + 15000, period_ms), 15000 - period_ms);
  // Measured from the late tick on: the next one on time is no stall.
  EXPECT_EQ(watch.stalled_ms(100000 + 15000 + period_ms, period_ms), 0);
}

}  // namespace
}  // namespace lifeboat
