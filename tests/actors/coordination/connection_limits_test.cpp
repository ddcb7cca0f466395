// connection_limits: at most max_unjoined connections wait to join at once,
// each for join_bound_ms; what joined or closed stops counting, and the
// earliest bound is the next deadline.
#include "actors/coordination/connection_limits.hpp"

#include <gtest/gtest.h>

namespace lifeboat {
namespace {

constexpr int64_t bound_ms = 5000;

TEST(connection_limits, admits_up_to_the_bound_and_a_forgotten_one_makes_room) {
  connection_limits limits{bound_ms, 2};
  EXPECT_TRUE(limits.admit(1, 0));
  EXPECT_TRUE(limits.admit(2, 0));
  EXPECT_FALSE(limits.admit(3, 0));
  EXPECT_EQ(limits.unjoined(), 2u);
  limits.forget(1);
  EXPECT_TRUE(limits.admit(3, 0));
  // Forgetting one that is not counted changes nothing.
  limits.forget(42);
  EXPECT_EQ(limits.unjoined(), 2u);
  EXPECT_FALSE(limits.admit(4, 0));
}

TEST(connection_limits, a_connection_overstays_at_its_bound_and_is_taken_once) {
  connection_limits limits{bound_ms, 8};
  ASSERT_TRUE(limits.admit(1, 100));
  ASSERT_TRUE(limits.admit(2, 300));
  EXPECT_EQ(limits.next_deadline_ms(), 100 + bound_ms);
  EXPECT_TRUE(limits.take_expired(100 + bound_ms - 1).empty());
  EXPECT_EQ(limits.take_expired(100 + bound_ms), std::vector<conn_id>{1});
  EXPECT_TRUE(limits.take_expired(100 + bound_ms).empty());
  EXPECT_EQ(limits.next_deadline_ms(), 300 + bound_ms);
  EXPECT_EQ(limits.take_expired(1'000'000), std::vector<conn_id>{2});
  EXPECT_EQ(limits.next_deadline_ms(), std::nullopt);
  EXPECT_EQ(limits.unjoined(), 0u);
}

TEST(connection_limits, the_next_deadline_is_the_earliest_whatever_the_order_of_the_ids) {
  connection_limits limits{bound_ms, 8};
  ASSERT_TRUE(limits.admit(9, 50));
  ASSERT_TRUE(limits.admit(3, 700));
  ASSERT_TRUE(limits.admit(5, 20));
  EXPECT_EQ(limits.next_deadline_ms(), 20 + bound_ms);
  limits.forget(5);
  EXPECT_EQ(limits.next_deadline_ms(), 50 + bound_ms);
  EXPECT_EQ(limits.take_expired(700 + bound_ms), (std::vector<conn_id>{3, 9}));
}

}  // namespace
}  // namespace lifeboat
