#include "messages/errors.hpp"

#include <gtest/gtest.h>

namespace lifeboat {
namespace {

TEST(errors, codes_compare_equal_regardless_of_context) {
  auto plain = make_error(errc::already_exists);
  auto with_context = make_error(errc::already_exists, "key /a");
  EXPECT_EQ(plain.code(), with_context.code());
  EXPECT_EQ(plain.category(), with_context.category());
  EXPECT_NE(plain.code(), make_error(errc::timeout).code());
}

TEST(errors, describe_names_the_code_and_the_context) {
  EXPECT_EQ(describe(make_error(errc::corrupt, "shard 3")), "corrupt: shard 3");
  EXPECT_EQ(describe(make_error(errc::timeout)), "timeout");
  EXPECT_EQ(describe(caf::error{}), "ok");
}

}  // namespace
}  // namespace lifeboat
