#include "checkpoint/snapshot.hpp"

#include <cstring>
#include <stdexcept>

#include <gtest/gtest.h>

#include "messages/errors.hpp"

namespace lifeboat::checkpoint {
namespace {

TEST(snapshot, copies_buffers_and_callback_state_back_to_back) {
  state_registry reg;
  char a[3] = {'a', 'b', 'c'};
  std::string user = "user-state";
  ASSERT_FALSE(reg.add_host_buffer("a", a, sizeof(a)));
  ASSERT_FALSE(reg.add_callbacks(
      "u", [&] { return user; }, [](const std::string&) {}));
  auto pool = staging_pool::make();
  auto snap = take_snapshot(reg, *pool);
  ASSERT_TRUE(snap);
  ASSERT_EQ(snap->size(), 3u + user.size());
  EXPECT_EQ(std::string(snap->bytes.data(), snap->size()), "abcuser-state");
  ASSERT_EQ(snap->entries.size(), 2u);
  EXPECT_EQ(snap->entries[1].offset, 3u);
  EXPECT_EQ(snap->entries[1].size, user.size());
  // The snapshot is a copy: later changes do not reach it.
  a[0] = 'z';
  EXPECT_EQ(snap->bytes.data()[0], 'a');
}

// A registration that no longer stands for the state: no snapshot, and no
// callback asked for its state.
TEST(snapshot, a_failed_check_takes_no_snapshot) {
  state_registry reg;
  char a[3] = {'a', 'b', 'c'};
  int saves = 0;
  ASSERT_FALSE(reg.add_host_buffer("a", a, sizeof(a)));
  ASSERT_FALSE(reg.add_callbacks(
      "u",
      [&] {
        ++saves;
        return std::string{};
      },
      [](const std::string&) {}));
  ASSERT_FALSE(reg.add_check([] { throw std::runtime_error("'a' moved"); }));
  auto pool = staging_pool::make();
  auto snap = take_snapshot(reg, *pool);
  ASSERT_FALSE(snap);
  EXPECT_EQ(snap.error(), make_error(errc::invalid_config));
  EXPECT_EQ(saves, 0);
  EXPECT_EQ(pool->allocations(), 0u);
}

TEST(snapshot, same_size_snapshots_allocate_once) {
  state_registry reg;
  std::vector<char> big(1 << 20, 'x');
  ASSERT_FALSE(reg.add_host_buffer("big", big.data(), big.size()));
  auto pool = staging_pool::make();
  for (int i = 0; i < 5; ++i) {
    auto snap = take_snapshot(reg, *pool);
    ASSERT_TRUE(snap);
  }
  EXPECT_EQ(pool->allocations(), 1u);
}

}  // namespace
}  // namespace lifeboat::checkpoint
