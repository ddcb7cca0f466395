#include "checkpoint/manifest.hpp"

#include <gtest/gtest.h>

#include "checkpoint/framed_file.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/shard_writer.hpp"
#include "messages/errors.hpp"
#include "tests/checkpoint/test_support.hpp"

namespace lifeboat::checkpoint {
namespace {

class manifest_test : public ::testing::Test {
 protected:
  void write_shard(int rank, int world) {
    state_registry reg;
    ASSERT_FALSE(reg.add_host_buffer("b", bytes_.data(), bytes_.size()));
    auto snap = take_snapshot(reg, *pool_);
    ASSERT_TRUE(snap);
    ASSERT_TRUE(write_shard_files(dir_.path(), 3, rank, world, *snap));
  }

  testing::temp_dir dir_;
  std::vector<char> bytes_ = testing::pattern(4096, 9);
  std::shared_ptr<staging_pool> pool_ = staging_pool::make();
};

TEST_F(manifest_test, records_every_shard_and_the_run) {
  write_shard(0, 2);
  write_shard(1, 2);
  ASSERT_FALSE(write_manifest(*posix_file_system(), dir_.path(), 3, 2, 17));
  auto manifest = read_manifest(dir_.path(), 3);
  ASSERT_TRUE(manifest) << describe(manifest.error());
  EXPECT_EQ(manifest->step(), 3);
  EXPECT_EQ(manifest->world_size(), 2);
  EXPECT_EQ(manifest->total_run_calls(), 17);
  EXPECT_EQ(manifest->lifeboat_version(), LIFEBOAT_VERSION);
  EXPECT_EQ(manifest->schema_version(), checkpoint_schema_version);
  EXPECT_GT(manifest->created_unix_ms(), 0);
  ASSERT_EQ(manifest->shards_size(), 2);
  auto& second = manifest->shards(1);
  EXPECT_EQ(second.data_file(), shard_data_name(1, 2));
  EXPECT_EQ(second.data_bytes(), 4096);
  EXPECT_EQ(second.index_checksum(),
            checksum_of(testing::read_file(dir_.sub(shard_index_name(1, 2)))));
  EXPECT_EQ(second.chunks().checksums_size(), 1);
}

TEST_F(manifest_test, a_missing_shard_prevents_the_commit) {
  write_shard(0, 2);
  auto err = write_manifest(*posix_file_system(), dir_.path(), 3, 2, 0);
  EXPECT_EQ(err, make_error(errc::not_found));
  EXPECT_NE(describe(err).find("rank 1"), std::string::npos);
  EXPECT_FALSE(testing::exists(dir_.sub(manifest_file_name)));
}

TEST_F(manifest_test, absent_garbled_and_misplaced_manifests) {
  EXPECT_EQ(read_manifest(dir_.path(), 3).error(), make_error(errc::not_found));
  write_shard(0, 1);
  ASSERT_FALSE(write_manifest(*posix_file_system(), dir_.path(), 3, 1, 0));
  EXPECT_EQ(read_manifest(dir_.path(), 4).error(), make_error(errc::corrupt));
  auto bytes = testing::read_file(dir_.sub(manifest_file_name));
  bytes[bytes.size() / 2] ^= 0x40;
  testing::write_file(dir_.sub(manifest_file_name), bytes);
  auto garbled = read_manifest(dir_.path(), 3);
  ASSERT_FALSE(garbled);
  EXPECT_NE(describe(garbled.error()).find("corrupt file " + dir_.sub(manifest_file_name)),
            std::string::npos);
}

}  // namespace
}  // namespace lifeboat::checkpoint
