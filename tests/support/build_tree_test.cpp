#include "tests/support/build_tree.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

namespace lifeboat::test {
namespace {

TEST(build_tree_test, is_the_tree_that_holds_this_test_and_its_programs) {
  EXPECT_TRUE(std::filesystem::exists(build_tree() / "CMakeCache.txt"));
  EXPECT_TRUE(build_tree().is_absolute());
  auto probe = built(LIFEBOAT_CHILD_PROCESS_PROBE);
  EXPECT_EQ(probe.rfind(build_tree().string(), 0), 0u) << probe;
  EXPECT_EQ(::access(probe.c_str(), X_OK), 0) << probe;
}

}  // namespace
}  // namespace lifeboat::test
