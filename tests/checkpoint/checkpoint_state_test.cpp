#include "lifeboat/checkpoint_state.hpp"

#include <stdexcept>

#include <gtest/gtest.h>

#include "checkpoint/device_memory.hpp"
#include "checkpoint/state_registry.hpp"
#include "lifeboat/errors.hpp"
#include "messages/errors.hpp"

namespace lifeboat {
namespace {

TEST(checkpoint_state, forwards_registrations_to_the_registry) {
  checkpoint_state state;
  char buf[16];
  state.add_buffer("buf", buf, sizeof(buf));
  state.add_callbacks(
      "user", [] { return std::string{"x"}; }, [](const std::string&) {});
  auto& bufs = state.registry().buffers();
  ASSERT_EQ(bufs.size(), 2u);
  EXPECT_EQ(bufs[0].name, "buf");
  EXPECT_EQ(bufs[0].data, buf);
  EXPECT_EQ(bufs[1].kind, checkpoint::buffer_kind::callbacks);
}

TEST(checkpoint_state, bad_registrations_throw_config_error) {
  checkpoint_state state;
  char buf[16];
  state.add_buffer("buf", buf, sizeof(buf));
  EXPECT_THROW(state.add_buffer("buf", buf, sizeof(buf)), config_error);
}

TEST(checkpoint_state, checks_reach_the_registry) {
  checkpoint_state state;
  bool moved = false;
  state.add_check([&] {
    if (moved) throw std::runtime_error("'buf' moved");
  });
  EXPECT_FALSE(state.registry().run_checks());
  moved = true;
  EXPECT_NE(describe(state.registry().run_checks()).find("'buf' moved"), std::string::npos);
  EXPECT_THROW(state.add_check(nullptr), config_error);
}

TEST(checkpoint_state, device_buffers_without_a_device_throw_config_error) {
  if (!checkpoint::device::available()) GTEST_SKIP() << "a CUDA device is present";
  checkpoint_state state;
  char buf[16];
  try {
    state.add_device_buffer("d", buf, sizeof(buf));
    FAIL() << "no exception";
  } catch (const config_error& e) {
    EXPECT_NE(std::string{e.what()}.find("unavailable"), std::string::npos) << e.what();
  }
}

TEST(checkpoint_state, moves_keep_the_registry) {
  checkpoint_state a;
  char buf[4];
  a.add_buffer("buf", buf, sizeof(buf));
  checkpoint_state b{std::move(a)};
  EXPECT_EQ(b.registry().buffers().size(), 1u);
}

}  // namespace
}  // namespace lifeboat
