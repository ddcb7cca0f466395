#include "checkpoint/state_registry.hpp"

#include <gtest/gtest.h>

#include "messages/errors.hpp"

namespace lifeboat::checkpoint {
namespace {

TEST(state_registry, keeps_buffers_in_registration_order) {
  state_registry reg;
  char a[4];
  ASSERT_FALSE(reg.add_host_buffer("a", a, sizeof(a)));
  ASSERT_FALSE(reg.add_callbacks(
      "b", [] { return std::string{"x"}; }, [](const std::string&) {}));
  ASSERT_EQ(reg.buffers().size(), 2u);
  EXPECT_EQ(reg.buffers()[0].name, "a");
  EXPECT_EQ(reg.buffers()[0].size, 4u);
  EXPECT_EQ(reg.buffers()[1].kind, buffer_kind::callbacks);
  EXPECT_FALSE(reg.has_device_buffers());
}

TEST(state_registry, refuses_duplicate_and_empty_names_and_missing_callbacks) {
  state_registry reg;
  char a[4];
  ASSERT_FALSE(reg.add_host_buffer("a", a, sizeof(a)));
  auto dup = reg.add_host_buffer("a", a, sizeof(a));
  EXPECT_EQ(dup, make_error(errc::invalid_argument));
  EXPECT_NE(describe(dup).find("'a' registered twice"), std::string::npos);
  EXPECT_EQ(reg.add_host_buffer("", a, 1), make_error(errc::invalid_argument));
  EXPECT_EQ(reg.add_host_buffer("null", nullptr, 1), make_error(errc::invalid_argument));
  EXPECT_EQ(reg.add_callbacks("c", nullptr, [](const std::string&) {}),
            make_error(errc::invalid_argument));
}

}  // namespace
}  // namespace lifeboat::checkpoint
