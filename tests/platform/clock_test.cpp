#include "platform/clock.hpp"

#include <gtest/gtest.h>

namespace lifeboat {
namespace {

int64_t system_us() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

// Both readings are the wall clock on the Unix epoch, in their units: the
// microseconds fall between two readings taken around them, and the
// milliseconds taken next agree with them to the millisecond.
TEST(clock, unix_now_us_is_the_wall_clock_in_microseconds) {
  auto before = system_us();
  auto us = unix_now_us();
  auto after = system_us();
  EXPECT_LE(before, us);
  EXPECT_LE(us, after);
  auto ms = unix_now_ms();
  EXPECT_LE(us / 1000, ms);
  EXPECT_LE(ms, system_us() / 1000);
}

TEST(clock, until_counts_down_to_a_deadline) {
  auto now = unix_now_ms();
  EXPECT_GE(until(now + 60'000).count(), 59'000);
  EXPECT_LE(until(now - 1).count(), -1);
}

}  // namespace
}  // namespace lifeboat
