// A full disk, EIO on fsync, a short write, permission denied and a read-only
// directory, injected through the store's file system: a clear error
// (errc::io_error with the call, the path and the reason), no torn checkpoint
// committed, and the previous checkpoint restored.
#include <cerrno>
#include <memory>

#include <gtest/gtest.h>

#include "checkpoint/layout.hpp"
#include "checkpoint/store.hpp"
#include "messages/errors.hpp"
#include "tests/checkpoint/faulty_file_system.hpp"
#include "tests/checkpoint/test_support.hpp"
#include "tests/checkpoint/worker_state.hpp"

namespace lifeboat::checkpoint {
namespace {

using testing::faulty_file_system;
using testing::worker_state;
using call = faulty_file_system::call;

constexpr std::size_t state_bytes = 1 << 20;
constexpr const char* step_2_dir = "step-000000000002";
// Patterns of the faulty file system (fnmatch).
constexpr const char* data_tmp = "*.data.tmp";
constexpr const char* manifest_tmp = "*/MANIFEST.tmp";
constexpr const char* step_2_dir_itself = "*/step-000000000002";
constexpr const char* write_probe = "*/.lifeboat-write-probe-*";

class store_failure_test : public ::testing::Test {
 protected:
  void SetUp() override {
    auto st = store::open({dir_.path(), 0, 1});
    ASSERT_TRUE(st);
    state_.set(1);
    auto snap = st->take_snapshot(state_.registry);
    ASSERT_TRUE(snap && st->write_shard(*snap, 1));
    ASSERT_FALSE(st->commit(1, 1));
  }

  store_config faulty_config() const {
    store_config cfg{dir_.path(), 0, 1};
    cfg.files = fs_;
    return cfg;
  }

  // Step 2 saved and committed through the faulty file system; what it said.
  std::string save_step_2() {
    auto st = store::open(faulty_config());
    if (!st) return describe(st.error());
    state_.set(2);
    auto snap = st->take_snapshot(state_.registry);
    if (!snap) return describe(snap.error());
    auto info = st->write_shard(*snap, 2);
    if (!info) return describe(info.error());
    return describe(st->commit(2, 2));
  }

  // Step 1 is still the latest commit, whole, and step 2 left no ".tmp" file.
  void expect_previous_intact() {
    auto st = store::open({dir_.path(), 0, 1});
    ASSERT_TRUE(st);
    auto steps = st->committed_steps();
    ASSERT_TRUE(steps);
    EXPECT_EQ(*steps, std::vector<int64_t>{1});
    worker_state fresh{state_bytes};
    auto restored = st->restore_latest(fresh.registry);
    ASSERT_TRUE(restored && *restored);
    EXPECT_EQ((*restored)->step, 1);
    EXPECT_TRUE(fresh.holds(1));
    if (!testing::exists(dir_.sub(step_2_dir))) return;
    auto names = list_dir(dir_.sub(step_2_dir));
    ASSERT_TRUE(names);
    for (const auto& name : *names)
      EXPECT_EQ(name.find(temp_suffix), std::string::npos) << name << " left behind";
  }

  std::string step_2_file(const std::string& name) const {
    return dir_.sub(std::string{step_2_dir} + "/" + name);
  }

  testing::temp_dir dir_;
  worker_state state_{state_bytes};
  std::shared_ptr<faulty_file_system> fs_ = std::make_shared<faulty_file_system>();
};

TEST_F(store_failure_test, disk_full_while_writing_the_data_file) {
  fs_->fail(call::pwrite, data_tmp, ENOSPC);
  EXPECT_EQ(save_step_2(), "io_error: write " + step_2_file(shard_data_name(0, 1)) +
                               ".tmp: No space left on device");
  expect_previous_intact();
}

TEST_F(store_failure_test, disk_full_while_writing_the_manifest) {
  fs_->fail(call::pwrite, manifest_tmp, ENOSPC);
  EXPECT_EQ(save_step_2(),
            "io_error: write " + step_2_file(manifest_file_name) + ".tmp: No space left on device");
  expect_previous_intact();
}

TEST_F(store_failure_test, eio_on_fsync_of_the_data_file) {
  fs_->fail(call::fsync, data_tmp, EIO);
  EXPECT_EQ(save_step_2(),
            "io_error: fsync " + step_2_file(shard_data_name(0, 1)) + ".tmp: Input/output error");
  expect_previous_intact();
}

TEST_F(store_failure_test, eio_on_fsync_of_the_step_directory) {
  // The last fsync of a shard: it makes the renames of its files durable.
  fs_->fail(call::fsync, step_2_dir_itself, EIO);
  EXPECT_EQ(save_step_2(), "io_error: fsync " + dir_.sub(step_2_dir) + ": Input/output error");
  expect_previous_intact();
}

TEST_F(store_failure_test, a_short_write_then_a_full_device) {
  fs_->shorten_writes(data_tmp, true);
  EXPECT_EQ(save_step_2(), "io_error: write " + step_2_file(shard_data_name(0, 1)) +
                               ".tmp: No space left on device");
  EXPECT_GE(fs_->injected(), 2);
  expect_previous_intact();
}

TEST_F(store_failure_test, short_writes_are_carried_on_to_a_whole_checkpoint) {
  fs_->shorten_writes(data_tmp, false);
  EXPECT_EQ(save_step_2(), describe(caf::error{}));
  EXPECT_GE(fs_->injected(), 2);
  auto st = store::open({dir_.path(), 0, 1});
  ASSERT_TRUE(st);
  worker_state fresh{state_bytes};
  auto restored = st->restore_latest(fresh.registry);
  ASSERT_TRUE(restored && *restored);
  EXPECT_EQ((*restored)->step, 2);
  EXPECT_TRUE(fresh.holds(2));
}

TEST_F(store_failure_test, permission_denied_on_open) {
  // store::open proves the directory writable with a probe file.
  fs_->fail(call::open, write_probe, EACCES);
  auto st = store::open(faulty_config());
  ASSERT_FALSE(st);
  auto said = describe(st.error());
  EXPECT_NE(said.find("unusable checkpoint directory"), std::string::npos) << said;
  EXPECT_NE(said.find("Permission denied"), std::string::npos) << said;
  EXPECT_NE(said.find(dir_.path()), std::string::npos) << said;
  expect_previous_intact();
}

TEST_F(store_failure_test, directory_made_read_only_before_the_save) {
  fs_->fail(call::mkdir, step_2_dir_itself, EACCES);
  EXPECT_EQ(save_step_2(), "io_error: mkdir " + dir_.sub(step_2_dir) + ": Permission denied");
  expect_previous_intact();
}

TEST_F(store_failure_test, a_directory_under_a_regular_file) {
  testing::write_file(dir_.sub("file"), "x");
  auto st = store::open({dir_.sub("file/checkpoints"), 0, 1});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error(), make_error(errc::io_error));
  EXPECT_NE(
      describe(st.error()).find("mkdir " + dir_.sub("file/checkpoints") + ": Not a directory"),
      std::string::npos)
      << describe(st.error());
}

}  // namespace
}  // namespace lifeboat::checkpoint
