// Who may read what the checkpoint store creates, and that a manifest cannot
// point a restore at files outside its step directory.

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "checkpoint/framed_file.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/store.hpp"
#include "messages/errors.hpp"
#include "tests/checkpoint/test_support.hpp"
#include "tests/checkpoint/worker_state.hpp"

namespace lifeboat::checkpoint {
namespace {

constexpr std::size_t state_bytes = 4096;
// A common umask that leaves group and others read access: the store's own
// modes must be what keeps them out.
constexpr mode_t permissive_umask = 022;

mode_t permissions_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

class store_permissions_test : public ::testing::Test {
 protected:
  void SetUp() override { old_umask_ = ::umask(permissive_umask); }
  void TearDown() override { ::umask(old_umask_); }

  // Opens a store in a directory it creates and commits step 1.
  store saved(file_modes modes) {
    store_config cfg;
    cfg.dir = dir_.sub("ckpt");
    cfg.file_mode = modes.file;
    cfg.dir_mode = modes.dir;
    auto st = store::open(cfg);
    EXPECT_TRUE(st) << describe(st.error());
    auto snap = st->take_snapshot(state_.registry);
    EXPECT_TRUE(snap);
    EXPECT_TRUE(st->write_shard(*snap, 1));
    EXPECT_FALSE(st->commit(1, 1));
    return std::move(*st);
  }

  void expect_modes(const store& st, mode_t file, mode_t dir) {
    auto step_dir = st.step_path(1);
    EXPECT_EQ(permissions_of(st.config().dir), dir);
    EXPECT_EQ(permissions_of(step_dir), dir);
    for (auto name :
         {shard_data_name(0, 1), shard_index_name(0, 1), std::string{manifest_file_name}})
      EXPECT_EQ(permissions_of(join_path(step_dir, name)), file) << name;
  }

  testing::temp_dir dir_;
  testing::worker_state state_{state_bytes};
  mode_t old_umask_ = 0;
};

TEST_F(store_permissions_test, files_are_readable_by_the_owner_only_by_default) {
  expect_modes(saved(file_modes{}), 0600, 0700);
}

TEST_F(store_permissions_test, configured_modes_are_applied) {
  expect_modes(saved(file_modes{0640, 0750}), 0640, 0750);
}

TEST_F(store_permissions_test, a_manifest_naming_a_file_outside_its_step_directory_is_corrupt) {
  auto st = saved(file_modes{});
  auto path = join_path(st.step_path(1), manifest_file_name);
  auto original = testing::read_file(path);
  wire::CheckpointManifest manifest;
  ASSERT_FALSE(decode_framed(manifest_magic, original, path, manifest));
  for (auto name : {"../../secret", "/etc/passwd", "sub/file", "..", ""}) {
    for (bool data : {true, false}) {
      auto tampered = manifest;
      auto* shard = tampered.mutable_shards(0);
      if (data)
        shard->set_data_file(name);
      else
        shard->set_index_file(name);
      testing::write_file(path, encode_framed(manifest_magic, tampered));
      auto read = read_manifest(st.step_path(1), 1);
      ASSERT_FALSE(read) << name;
      EXPECT_EQ(read.error(), make_error(errc::corrupt)) << name;
      EXPECT_NE(describe(read.error()).find("corrupt file " + path), std::string::npos)
          << describe(read.error());
    }
  }
  testing::write_file(path, original);
  EXPECT_TRUE(read_manifest(st.step_path(1), 1));
}

}  // namespace
}  // namespace lifeboat::checkpoint
