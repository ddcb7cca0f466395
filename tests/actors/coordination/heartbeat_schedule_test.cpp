#include "actors/coordination/heartbeat_schedule.hpp"

#include <gtest/gtest.h>

namespace lifeboat {
namespace {

using namespace std::chrono_literals;

TEST(heartbeat_schedule, a_quarter_of_the_timeout_at_most_a_second_apart) {
  EXPECT_EQ(heartbeat_interval_for(10s), 1000ms);
  EXPECT_EQ(heartbeat_interval_for(4s), 1000ms);
  EXPECT_EQ(heartbeat_interval_for(2s), 500ms);
  EXPECT_EQ(heartbeat_interval_for(min_heartbeat_timeout), 25ms);
}

}  // namespace
}  // namespace lifeboat
