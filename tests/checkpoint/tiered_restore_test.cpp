// restore_fastest: the memory tier when it has the newest step, else the
// peer's replica (streamed into the registered buffers), else the directory: when a
// copy is older, absent or corrupt (logged with "corrupt" and the file), and
// max_step for all; persist_to_directory writes a step only the memory or
// peer tier had.
#include "checkpoint/tiered_restore.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "checkpoint/file_io.hpp"
#include "checkpoint/framed_file.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/shard_reader.hpp"
#include "messages/errors.hpp"
#include "tests/checkpoint/test_support.hpp"
#include "tests/checkpoint/worker_state.hpp"

namespace lifeboat::checkpoint {
namespace {

using testing::worker_state;

constexpr std::size_t state_bytes = 256 * 1024;

// Flips the byte in the middle of the data file of `tier`'s `step`; its path.
std::string corrupt_data(const memory_tier& tier, int64_t step) {
  auto data = tier.files_of(step).data;
  EXPECT_TRUE(testing::flip_byte(data, state_bytes / 2)) << data;
  return data;
}

class tiered_restore_test : public ::testing::Test {
 protected:
  void SetUp() override {
    auto st = store::open({dir_.sub("ckpt"), 0, 1});
    ASSERT_TRUE(st);
    directory_.emplace(std::move(*st));
    auto tier = memory_tier::open(dir_.sub("memory"), 0, 1);
    ASSERT_TRUE(tier);
    memory_.emplace(std::move(*tier));
    auto replica = memory_tier::open(dir_.sub("peer"), 0, 1);
    ASSERT_TRUE(replica);
    replica_.emplace(std::move(*replica));
  }

  // The peer tier without its sockets: streams the replica's newest step in
  // range from its files into `registry`, as replica_client::fetch does from
  // the holder's connection.
  caf::expected<std::optional<checkpoint_info>> fetch(std::optional<int64_t> max_step,
                                                      int64_t min_step, state_registry& registry,
                                                      staging_pool& pool,
                                                      peer_fetch_progress& progress) {
    auto step = replica_->newest_step(max_step);
    if (!step || *step < min_step) return std::optional<checkpoint_info>{};
    progress.step = step;
    auto from = replica_->files_of(*step);
    auto index_bytes = read_whole_file(from.index);
    if (!index_bytes) return std::move(index_bytes.error());
    wire::ShardIndex index;
    if (auto err = decode_framed(index_magic, *index_bytes, from.index, index)) return err;
    if (auto err = check_buffer_table(index, registry)) return err;
    std::ifstream data{from.data, std::ios::binary};
    auto read_exact = [&](char* dst, size_t size) {
      return data.read(dst, static_cast<std::streamsize>(size))
                 ? caf::error{}
                 : make_error(errc::io_error, "short read of " + from.data);
    };
    if (auto err =
            load_shard_from_stream(from.data, index, registry, pool, progress.touched, read_exact))
      return err;
    checkpoint_info info;
    info.step = *step;
    info.total_run_calls = *step;
    info.bytes = index.data_bytes();
    info.tiers = {{tier_peer, 0.0}};
    return std::optional<checkpoint_info>{std::move(info)};
  }

  // Saves `step` to the peer's replica only.
  void save_replica(int64_t step) {
    state_.set(step);
    auto snap = directory_->take_snapshot(state_.registry);
    ASSERT_TRUE(snap);
    ASSERT_TRUE(replica_->save(*snap, step, step));
  }

  // Restores with the peer tier into a fresh state; the tier read.
  std::string restore_with_peer(int64_t expected_step) {
    worker_state fresh{state_bytes};
    auto restored =
        restore_fastest(*directory_, &*memory_, fresh.registry, std::nullopt,
                        [this](std::optional<int64_t> max, int64_t min, state_registry& registry,
                               staging_pool& pool, peer_fetch_progress& progress) {
                          return fetch(max, min, registry, pool, progress);
                        });
    EXPECT_TRUE(restored) << describe(restored.error());
    if (!restored || !*restored) return "";
    EXPECT_EQ((*restored)->step, expected_step);
    EXPECT_TRUE(fresh.holds(expected_step));
    return (*restored)->tiers.at(0).name;
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
  std::optional<memory_tier> replica_;  // the peer's copy of this rank's shards
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
  auto data = corrupt_data(*memory_, 1);
  ::testing::internal::CaptureStderr();
  auto tier = restore(std::nullopt, 1);
  auto log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(tier, tier_directory);
  EXPECT_NE(log.find("corrupt file " + data), std::string::npos) << log;
}

TEST_F(tiered_restore_test, an_empty_memory_tier_restores_the_peers_replica) {
  save(1, true, true);
  save_replica(2);
  // A replaced host: the worker opens an empty memory tier.
  ASSERT_FALSE(memory_->remove());
  auto fresh = memory_tier::open(dir_.sub("memory"), 0, 1);
  ASSERT_TRUE(fresh);
  memory_.emplace(std::move(*fresh));
  EXPECT_EQ(restore_with_peer(2), tier_peer);
  // Streamed into the buffers: no file between.
  EXPECT_EQ(memory_->newest_step(std::nullopt), std::nullopt);
}

TEST_F(tiered_restore_test, a_corrupt_memory_copy_restores_the_peers_replica) {
  save(1, true, true);
  save_replica(1);
  corrupt_data(*memory_, 1);
  EXPECT_EQ(restore_with_peer(1), tier_peer);
}

TEST_F(tiered_restore_test, a_corrupt_replica_restores_the_directory_and_says_corrupt) {
  save(1, false, true);
  save_replica(1);
  auto data = corrupt_data(*replica_, 1);
  ::testing::internal::CaptureStderr();
  auto tier = restore_with_peer(1);
  auto log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(tier, tier_directory);
  EXPECT_NE(log.find("peer tier: step 1 not restored, reading the checkpoint directory"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("corrupt file " + data), std::string::npos) << log;
}

// Another model (buffers of another size) fits no tier's copy: refused at the
// first, without fetching the peer's replica or reading the directory only to
// refuse them again.
TEST_F(tiered_restore_test, a_copy_that_does_not_fit_the_registered_state_is_refused_at_once) {
  save(1, true, true);
  save_replica(1);
  worker_state other{state_bytes * 2};
  bool fetched = false;
  ::testing::internal::CaptureStderr();
  auto restored =
      restore_fastest(*directory_, &*memory_, other.registry, std::nullopt,
                      [&](std::optional<int64_t>, int64_t, state_registry&, staging_pool&,
                          peer_fetch_progress&) -> caf::expected<std::optional<checkpoint_info>> {
                        fetched = true;
                        return std::optional<checkpoint_info>{};
                      });
  auto log = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(restored);
  EXPECT_EQ(restored.error(), make_error(errc::invalid_config)) << describe(restored.error());
  EXPECT_NE(describe(restored.error()).find("step 1 in the memory tier " + memory_->path()),
            std::string::npos)
      << describe(restored.error());
  EXPECT_FALSE(fetched);
  EXPECT_EQ(log.find("not restored"), std::string::npos) << log;
  // The replica, fetched first where memory holds nothing, is refused alike.
  ASSERT_FALSE(memory_->remove());
  auto fresh = memory_tier::open(dir_.sub("memory"), 0, 1);
  ASSERT_TRUE(fresh);
  memory_.emplace(std::move(*fresh));
  ::testing::internal::CaptureStderr();
  restored = restore_fastest(
      *directory_, &*memory_, other.registry, std::nullopt,
      [this](std::optional<int64_t> max, int64_t min, state_registry& registry, staging_pool& pool,
             peer_fetch_progress& progress) { return fetch(max, min, registry, pool, progress); });
  log = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(restored);
  EXPECT_EQ(restored.error(), make_error(errc::invalid_config)) << describe(restored.error());
  EXPECT_EQ(log.find("reading the checkpoint directory"), std::string::npos) << log;
}

TEST_F(tiered_restore_test, a_replica_older_than_the_directory_is_not_fetched) {
  save(2, false, true);
  save_replica(1);
  EXPECT_EQ(restore_with_peer(2), tier_directory);
  EXPECT_EQ(memory_->newest_step(std::nullopt), std::nullopt);
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
  EXPECT_FALSE(directory_holds(*directory_, **info));
  async_saver saver{*directory_, nullptr};
  std::vector<int64_t> persisted;
  ASSERT_FALSE(persist_to_directory(saver, *directory_, restored.registry, **info,
                                    [&](int64_t step) { persisted.push_back(step); }));
  ASSERT_FALSE(saver.wait(std::chrono::seconds{30}));
  EXPECT_EQ(persisted, std::vector<int64_t>{2});
  EXPECT_EQ(directory_->newest_committed_step(std::nullopt), 2);
  EXPECT_TRUE(directory_holds(*directory_, **info));
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
  EXPECT_TRUE(directory_holds(*directory_, **info));
  async_saver saver{*directory_, nullptr};
  bool persisted = false;
  ::testing::internal::CaptureStderr();
  ASSERT_FALSE(persist_to_directory(saver, *directory_, restored.registry, **info,
                                    [&](int64_t) { persisted = true; }));
  ASSERT_FALSE(saver.wait(std::chrono::seconds{30}));
  auto log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(log.find("in memory only"), std::string::npos) << log;
  EXPECT_FALSE(persisted);
}

}  // namespace
}  // namespace lifeboat::checkpoint
