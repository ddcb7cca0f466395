// Each kind of damage to the newest checkpoint is found on restore, logged
// with the word "corrupt" and the file, and the previous checkpoint is used.
#include <unistd.h>

#include <gtest/gtest.h>

#include "checkpoint/layout.hpp"
#include "checkpoint/store.hpp"
#include "messages/errors.hpp"
#include "tests/checkpoint/test_support.hpp"
#include "tests/checkpoint/worker_state.hpp"

namespace lifeboat::checkpoint {
namespace {

using testing::worker_state;

// More than one chunk, so that the damage lands in a chunk other than the first.
constexpr std::size_t state_bytes = 12 << 20;
constexpr std::size_t damaged_offset = 9 << 20;

class store_corruption_test : public ::testing::Test {
 protected:
  void SetUp() override {
    auto st = store::open({dir_.path(), 0, 1});
    ASSERT_TRUE(st);
    for (int64_t step : {1, 2}) {
      state_.set(step);
      auto snap = st->take_snapshot(state_.registry);
      ASSERT_TRUE(snap && st->write_shard(*snap, step));
      ASSERT_FALSE(st->commit(step, step));
    }
    store_.emplace(std::move(*st));
  }

  std::string newest(const std::string& name) { return store_->step_path(2) + "/" + name; }

  // Restores and returns the log; expects step 1 to be restored.
  std::string restore_expecting_previous() {
    worker_state fresh{state_bytes};
    ::testing::internal::CaptureStderr();
    auto restored = store_->restore_latest(fresh.registry);
    auto log = ::testing::internal::GetCapturedStderr();
    EXPECT_TRUE(restored) << describe(restored.error());
    if (restored && *restored) {
      EXPECT_EQ((*restored)->step, 1);
    } else {
      ADD_FAILURE() << "nothing restored";
    }
    EXPECT_TRUE(fresh.holds(1));
    return log;
  }

  testing::temp_dir dir_;
  worker_state state_{state_bytes};
  std::optional<store> store_;
};

TEST_F(store_corruption_test, a_flipped_byte_in_a_shard) {
  auto path = newest(shard_data_name(0, 1));
  auto bytes = testing::read_file(path);
  bytes[damaged_offset] ^= 0x10;
  testing::write_file(path, bytes);
  auto log = restore_expecting_previous();
  EXPECT_NE(log.find("corrupt file " + path), std::string::npos) << log;
  EXPECT_NE(log.find("chunk 1 "), std::string::npos) << log;
}

TEST_F(store_corruption_test, a_truncated_shard) {
  auto path = newest(shard_data_name(0, 1));
  ASSERT_EQ(::truncate(path.c_str(), damaged_offset), 0);
  auto log = restore_expecting_previous();
  EXPECT_NE(log.find("corrupt file " + path), std::string::npos) << log;
}

TEST_F(store_corruption_test, a_deleted_shard) {
  auto path = newest(shard_data_name(0, 1));
  ASSERT_EQ(::unlink(path.c_str()), 0);
  auto log = restore_expecting_previous();
  EXPECT_NE(log.find("corrupt file " + path + ": missing"), std::string::npos) << log;
}

TEST_F(store_corruption_test, a_deleted_index) {
  auto path = newest(shard_index_name(0, 1));
  ASSERT_EQ(::unlink(path.c_str()), 0);
  auto log = restore_expecting_previous();
  EXPECT_NE(log.find("corrupt file " + path), std::string::npos) << log;
}

TEST_F(store_corruption_test, a_garbled_manifest) {
  auto path = newest(manifest_file_name);
  auto bytes = testing::read_file(path);
  for (std::size_t i = bytes.size() / 2; i < bytes.size(); ++i) bytes[i] = 'G';
  testing::write_file(path, bytes);
  auto log = restore_expecting_previous();
  EXPECT_NE(log.find("corrupt file " + path), std::string::npos) << log;
}

TEST_F(store_corruption_test, nothing_verified_after_buffers_were_overwritten_is_an_error) {
  for (int64_t step : {1, 2}) {
    auto path = store_->step_path(step) + "/" + shard_data_name(0, 1);
    auto bytes = testing::read_file(path);
    bytes[damaged_offset] ^= 0x10;
    testing::write_file(path, bytes);
  }
  worker_state fresh{state_bytes};
  ::testing::internal::CaptureStderr();
  auto restored = store_->restore_latest(fresh.registry);
  ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(restored);
  EXPECT_EQ(restored.error().code(), static_cast<uint8_t>(errc::corrupt));
  // The newest, step 2, was read first, into the fresh buffers.
  EXPECT_EQ(describe(restored.error()),
            "corrupt: no checkpoint in " + store_->config().dir +
                " verified, and the registered buffers were partly overwritten by corrupt step 2: "
                "put back an intact copy of " +
                store_->step_path(2) + ", or move it aside to start from scratch");
}

}  // namespace
}  // namespace lifeboat::checkpoint
