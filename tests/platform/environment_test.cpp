#include "platform/environment.hpp"

#include <cstdlib>

#include <gtest/gtest.h>

#include "tests/platform/fake_env.hpp"

namespace lifeboat {
namespace {

TEST(environment, process_environment_reads_getenv) {
  auto env = process_environment();
  ASSERT_NE(std::getenv("PATH"), nullptr);
  EXPECT_STREQ(env("PATH"), std::getenv("PATH"));
  EXPECT_EQ(env("LIFEBOAT_SURELY_NOT_SET_ANYWHERE"), nullptr);
}

TEST(environment, empty_value_counts_as_absent) {
  std::map<std::string, std::string> table{{"EMPTY", ""}, {"SET", "x"}};
  auto env = testing::table_env(table);
  EXPECT_EQ(env_value(env, "EMPTY"), nullptr);
  EXPECT_EQ(env_value(env, "MISSING"), nullptr);
  EXPECT_STREQ(env_value(env, "SET"), "x");
}

}  // namespace
}  // namespace lifeboat
