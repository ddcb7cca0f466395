// restore_fastest: the memory tier when it has the newest step, the directory
// when the memory copy is older, absent or corrupt (logged with "corrupt" and
// the file), and max_step for both; persist_to_directory writes a step only
// the memory tier had.
#include "checkpoint/tiered_restore.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "checkpoint/layout.hpp"
#include "messages/errors.hpp"
#include "tests/checkpoint/test_support.hpp"
#include "tests/checkpoint/worker_state.hpp"

namespace lifeboat::checkpoint {
namespace {

using testing::worker_state;

constexpr std::size_t state_bytes = 256 * 1024;

class tiered_restore_test : public ::testing::Test {
 protected:
  void SetUp() override {
    auto st = store::open({dir_.sub("ckpt"), 0, 1});
    ASSERT_TRUE(st);
    directory_.emplace(std::move(*st));
    auto tier = memory_tier::open(dir_.sub("memory"), 0, 1);
    ASSERT_TRUE(tier);
    memory_.emplace(std::move(*tier));
  }

  // Saves `step` to the memory tier, the directory, or both.
  void save(int64_t step, bool in_memory, bool in_directory) {
    state_.set(step);
    auto snap = directory_->take_snapshot(state_.registry);
    ASSERT_TRUE(snap);
    if (in_memory) {
      ASSERT_TRUE(memory_->save(*snap, step, step));
    }
    if (!in_directory) return;
    ASSERT_TRUE(directory_->write_shard(*snap, step));
    ASSERT_FALSE(directory_->commit(step, step));
  }

  // Restores into a fresh state; returns the tier read, "" for none.
  std::string restore(std::optional<int64_t> max_step, int64_t expected_step) {
    worker_state fresh{state_bytes};
    auto restored = restore_fastest(*directory_, &*memory_, fresh.registry, max_step);
    EXPECT_TRUE(restored) << describe(restored.error());
    if (!restored || !*restored) return "";
    EXPECT_EQ((*restored)->step, expected_step);
    EXPECT_TRUE(fresh.holds(expected_step));
    return (*restored)->tiers.at(0).name;
  }

  testing::temp_dir dir_;
  worker_state state_{state_bytes};
  std::optional<store> directory_;
  std::optional<memory_tier> memory_;
};

TEST_F(tiered_restore_test, the_memory_tier_when_it_has_the_newest_step) {
  save(1, true, true);
  EXPECT_EQ(restore(std::nullopt, 1), tier_memory);
}

TEST_F(tiered_restore_test, a_step_only_in_memory_is_restored_from_there) {
  save(1, true, true);
  save(2, true, false);
  EXPECT_EQ(restore(std::nullopt, 2), tier_memory);
  EXPECT_EQ(restore(1, 1), tier_memory);
}

TEST_F(tiered_restore_test, the_directory_when_the_memory_copy_is_older) {
  save(1, true, true);
  save(2, false, true);
  EXPECT_EQ(restore(std::nullopt, 2), tier_directory);
}

TEST_F(tiered_restore_test, the_directory_when_the_memory_tier_is_empty) {
  save(1, true, true);
  ASSERT_FALSE(memory_->remove());
  EXPECT_EQ(restore(std::nullopt, 1), tier_directory);
}

TEST_F(tiered_restore_test, the_directory_when_the_memory_copy_is_corrupt) {
  save(1, true, true);
  auto data = memory_->path() + "/" + step_dir_name(1) + "/" + shard_data_name(0, 1);
  {
    std::fstream f{data, std::ios::in | std::ios::out | std::ios::binary};
    auto middle = static_cast<std::streamoff>(state_bytes / 2);
    f.seekg(middle);
    char byte = static_cast<char>(f.get() ^ 0x5a);
    f.seekp(middle);
    f.put(byte);
  }
  ::testing::internal::CaptureStderr();
  auto tier = restore(std::nullopt, 1);
  auto log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(tier, tier_directory);
  EXPECT_NE(log.find("corrupt file " + data), std::string::npos) << log;
}

TEST_F(tiered_restore_test, without_a_memory_tier_the_directory) {
  save(1, true, true);
  worker_state fresh{state_bytes};
  auto restored = restore_fastest(*directory_, nullptr, fresh.registry, std::nullopt);
  ASSERT_TRUE(restored && *restored);
  EXPECT_EQ((*restored)->tiers.at(0).name, tier_directory);
  EXPECT_TRUE(fresh.holds(1));
}

TEST_F(tiered_restore_test, a_step_restored_from_memory_only_is_persisted_to_the_directory) {
  save(1, true, true);
  save(2, true, false);
  worker_state restored{state_bytes};
  auto info = restore_fastest(*directory_, &*memory_, restored.registry, std::nullopt);
  ASSERT_TRUE(info && *info);
  async_saver saver{*directory_, nullptr};
  ASSERT_FALSE(persist_to_directory(saver, *directory_, restored.registry, **info));
  ASSERT_FALSE(saver.wait(std::chrono::seconds{30}));
  EXPECT_EQ(directory_->newest_committed_step(std::nullopt), 2);
  worker_state fresh{state_bytes};
  auto from_directory = directory_->restore_latest(fresh.registry);
  ASSERT_TRUE(from_directory && *from_directory);
  EXPECT_TRUE(fresh.holds(2));
}

TEST_F(tiered_restore_test, a_step_the_directory_has_is_not_written_again) {
  save(1, true, true);
  worker_state restored{state_bytes};
  auto info = restore_fastest(*directory_, &*memory_, restored.registry, std::nullopt);
  ASSERT_TRUE(info && *info);
  async_saver saver{*directory_, nullptr};
  ::testing::internal::CaptureStderr();
  ASSERT_FALSE(persist_to_directory(saver, *directory_, restored.registry, **info));
  ASSERT_FALSE(saver.wait(std::chrono::seconds{30}));
  auto log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(log.find("in memory only"), std::string::npos) << log;
}

}  // namespace
}  // namespace lifeboat::checkpoint
