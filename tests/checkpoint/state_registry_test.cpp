#include "checkpoint/state_registry.hpp"

#include <stdexcept>
#include <vector>

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

// A name the shard index (a protobuf string) could write but never read
// back: every checkpoint would be corrupt at restore.
TEST(state_registry, refuses_a_name_that_is_not_utf8) {
  state_registry reg;
  char a[4];
  auto latin1 = reg.add_host_buffer("caf\xE9", a, sizeof(a));
  EXPECT_EQ(latin1, make_error(errc::invalid_argument));
  EXPECT_EQ(describe(latin1),
            "invalid_argument: checkpoint buffer name 'caf\xEF\xBF\xBD' is not UTF-8");
  EXPECT_EQ(reg.add_callbacks(
                "\xFF", [] { return std::string{}; }, [](const std::string&) {}),
            make_error(errc::invalid_argument));
  EXPECT_FALSE(reg.add_host_buffer("caf\xC3\xA9", a, sizeof(a)));
  EXPECT_EQ(reg.buffers().size(), 1u);
}

// A handler seals its state: what is registered after its restore would be
// saved, and the next start could not read that checkpoint back.
TEST(state_registry, refuses_every_registration_once_sealed) {
  state_registry reg;
  char a[4];
  ASSERT_FALSE(reg.add_host_buffer("a", a, sizeof(a)));
  reg.seal();
  auto late = reg.add_host_buffer("late", a, sizeof(a));
  EXPECT_EQ(late, make_error(errc::invalid_argument));
  EXPECT_NE(describe(late).find("'late' registered after the handler was constructed"),
            std::string::npos)
      << describe(late);
  EXPECT_EQ(reg.add_callbacks(
                "c", [] { return std::string{}; }, [](const std::string&) {}),
            make_error(errc::invalid_argument));
  EXPECT_EQ(reg.buffers().size(), 1u);
}

TEST(state_registry, checks_run_in_order_and_the_first_to_throw_is_invalid_config) {
  state_registry reg;
  std::vector<int> ran;
  ASSERT_FALSE(reg.add_check([&] { ran.push_back(1); }));
  EXPECT_FALSE(reg.run_checks());
  ASSERT_FALSE(reg.add_check([&] {
    ran.push_back(2);
    throw std::runtime_error("tensor 'w' moved");
  }));
  ASSERT_FALSE(reg.add_check([&] { ran.push_back(3); }));
  auto err = reg.run_checks();
  EXPECT_EQ(err, make_error(errc::invalid_config));
  EXPECT_NE(describe(err).find("tensor 'w' moved"), std::string::npos) << describe(err);
  EXPECT_EQ(ran, (std::vector<int>{1, 1, 2}));
  EXPECT_EQ(reg.add_check(nullptr), make_error(errc::invalid_argument));
  reg.seal();
  EXPECT_EQ(reg.add_check([] {}), make_error(errc::invalid_argument));
}

}  // namespace
}  // namespace lifeboat::checkpoint
