#include "platform/metadata_endpoint.hpp"

#include <gtest/gtest.h>

#include "messages/errors.hpp"
#include "tests/platform/fake_env.hpp"

namespace lifeboat {
namespace {

using namespace std::chrono_literals;

TEST(metadata_endpoint, first_set_variable_wins_with_port_80_by_default) {
  std::map<std::string, std::string> table{{"B", "10.1.2.3"}, {"C", "h:81"}};
  auto where = metadata_endpoint(testing::table_env(table), {"A", "B", "C"}, "fallback");
  ASSERT_TRUE(where);
  EXPECT_EQ(where->to_string(), "10.1.2.3:80");
}

TEST(metadata_endpoint, fallback_when_none_is_set) {
  std::map<std::string, std::string> table;
  auto where = metadata_endpoint(testing::table_env(table), {"A"}, kLinkLocalMetadataHost);
  ASSERT_TRUE(where);
  EXPECT_EQ(where->to_string(), "169.254.169.254:80");
}

TEST(metadata_endpoint, malformed_value_names_the_variable) {
  std::map<std::string, std::string> table{{"A", "h:0"}};
  auto where = metadata_endpoint(testing::table_env(table), {"A"}, "fallback");
  ASSERT_FALSE(where);
  EXPECT_NE(describe(where.error()).find("A='h:0'"), std::string::npos) << describe(where.error());
}

TEST(metadata_endpoint, time_left_is_never_negative) {
  auto now = std::chrono::steady_clock::now();
  EXPECT_EQ(time_left(now - 1s), 0ms);
  EXPECT_GT(time_left(now + 10s), 9s);
}

}  // namespace
}  // namespace lifeboat
