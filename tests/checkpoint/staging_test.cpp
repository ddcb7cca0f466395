#include "checkpoint/staging.hpp"

#include <gtest/gtest.h>

namespace lifeboat::checkpoint {
namespace {

TEST(staging, a_returned_buffer_is_reused_for_the_same_size) {
  auto pool = staging_pool::make();
  char* first = nullptr;
  {
    auto lease = pool->acquire(1 << 20, false);
    ASSERT_TRUE(lease);
    first = lease->data();
    EXPECT_EQ(lease->size(), 1u << 20);
  }
  auto again = pool->acquire(1 << 20, false);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->data(), first);
  EXPECT_EQ(pool->allocations(), 1u);
}

TEST(staging, two_leases_at_once_get_two_buffers) {
  auto pool = staging_pool::make();
  auto a = pool->acquire(4096, false);
  auto b = pool->acquire(4096, false);
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->data(), b->data());
  EXPECT_EQ(pool->allocations(), 2u);
}

TEST(staging, a_larger_save_replaces_a_too_small_buffer) {
  auto pool = staging_pool::make();
  { auto small = pool->acquire(4096, false); }
  auto large = pool->acquire(1 << 20, false);
  ASSERT_TRUE(large);
  large->data()[(1 << 20) - 1] = 1;
  EXPECT_EQ(pool->allocations(), 2u);
}

TEST(staging, a_zero_byte_lease_is_valid) {
  auto pool = staging_pool::make();
  auto lease = pool->acquire(0, false);
  ASSERT_TRUE(lease);
  EXPECT_EQ(lease->size(), 0u);
}

}  // namespace
}  // namespace lifeboat::checkpoint
