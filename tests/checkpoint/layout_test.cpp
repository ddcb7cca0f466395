#include "checkpoint/layout.hpp"

#include <gtest/gtest.h>

namespace lifeboat::checkpoint {
namespace {

TEST(layout, step_dir_names_sort_by_step_and_parse_back) {
  EXPECT_EQ(step_dir_name(123), "step-000000000123");
  EXPECT_LT(step_dir_name(9), step_dir_name(10));
  EXPECT_EQ(parse_step_dir_name(step_dir_name(987654321)), 987654321);
}

TEST(layout, foreign_names_are_not_steps) {
  EXPECT_FALSE(parse_step_dir_name("step-12"));
  EXPECT_FALSE(parse_step_dir_name("step-00000000012x"));
  EXPECT_FALSE(parse_step_dir_name("MANIFEST"));
  EXPECT_FALSE(parse_step_dir_name("step-000000000123.tmp"));
}

TEST(layout, shard_names_carry_rank_and_world_size) {
  EXPECT_EQ(shard_data_name(1, 4), "shard-00001-of-00004.data");
  EXPECT_EQ(shard_index_name(3, 4), "shard-00003-of-00004.index");
}

}  // namespace
}  // namespace lifeboat::checkpoint
