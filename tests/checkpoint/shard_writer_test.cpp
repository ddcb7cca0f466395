#include "checkpoint/shard_writer.hpp"

#include <xxhash.h>

#include <gtest/gtest.h>

#include "checkpoint/framed_file.hpp"
#include "checkpoint/layout.hpp"
#include "messages/checkpoint.pb.h"
#include "messages/errors.hpp"
#include "tests/checkpoint/test_support.hpp"

namespace lifeboat::checkpoint {
namespace {

using testing::exists;
using testing::read_file;

TEST(shard_writer, writes_data_and_an_index_with_chunk_checksums) {
  testing::temp_dir dir;
  auto bytes = testing::pattern(2500, 1);
  std::string user = "abc";
  state_registry reg;
  ASSERT_FALSE(reg.add_host_buffer("w", bytes.data(), bytes.size()));
  ASSERT_FALSE(reg.add_callbacks(
      "u", [&] { return user; }, [](const std::string&) {}));
  auto pool = staging_pool::make();
  auto snap = take_snapshot(reg, *pool);
  ASSERT_TRUE(snap);
  shard_write_options options;
  options.chunk_size = 1000;
  auto written = write_shard_files(dir.path(), 5, 1, 2, *snap, options);
  ASSERT_TRUE(written);
  EXPECT_EQ(written->data_bytes, 2503u);
  auto data = read_file(dir.sub(shard_data_name(1, 2)));
  EXPECT_EQ(data, std::string(bytes.begin(), bytes.end()) + user);
  EXPECT_FALSE(exists(dir.sub(shard_data_name(1, 2)) + temp_suffix));
  EXPECT_FALSE(exists(dir.sub(shard_index_name(1, 2)) + temp_suffix));
  wire::ShardIndex index;
  ASSERT_FALSE(decode_framed(index_magic, read_file(dir.sub(shard_index_name(1, 2))), "i", index));
  EXPECT_EQ(index.step(), 5);
  EXPECT_EQ(index.rank(), 1);
  EXPECT_EQ(index.world_size(), 2);
  EXPECT_EQ(index.data_bytes(), 2503);
  ASSERT_EQ(index.buffers_size(), 2);
  EXPECT_EQ(index.buffers(1).name(), "u");
  EXPECT_EQ(index.buffers(1).kind(), wire::SHARD_BUFFER_CALLBACKS);
  EXPECT_EQ(index.buffers(1).offset(), 2500);
  ASSERT_EQ(index.chunks().checksums_size(), 3);
  EXPECT_EQ(index.chunks().checksums(2), XXH3_64bits(data.data() + 2000, 503));
}

// The data goes to the file with O_DIRECT in whole 4096-byte blocks and the
// tail through the page cache; chunks of 1000 bytes straddle both.
TEST(shard_writer, a_file_written_directly_with_an_unaligned_tail_reads_back_whole) {
  testing::temp_dir dir;
  constexpr size_t size = 3 * 4096 + 100;
  auto bytes = testing::pattern(size, 7);
  state_registry reg;
  ASSERT_FALSE(reg.add_host_buffer("w", bytes.data(), bytes.size()));
  auto pool = staging_pool::make();
  auto snap = take_snapshot(reg, *pool);
  ASSERT_TRUE(snap);
  constexpr uint64_t chunk = 1000;
  shard_write_options options;
  options.chunk_size = chunk;
  auto written = write_shard_files(dir.path(), 1, 0, 1, *snap, options);
  ASSERT_TRUE(written);
  auto data = read_file(dir.sub(shard_data_name(0, 1)));
  ASSERT_EQ(data, std::string(bytes.begin(), bytes.end()));
  wire::ShardIndex index;
  ASSERT_FALSE(decode_framed(index_magic, read_file(dir.sub(shard_index_name(0, 1))), "i", index));
  EXPECT_EQ(index.chunks().chunk_size(), 1000);
  ASSERT_EQ(index.chunks().checksums_size(), 13);
  for (int i = 0; i < 13; ++i) {
    auto begin = static_cast<size_t>(i) * chunk;
    EXPECT_EQ(index.chunks().checksums(i),
              XXH3_64bits(data.data() + begin, std::min<size_t>(chunk, size - begin)));
  }
}

TEST(shard_writer, a_failed_write_names_the_file_and_leaves_no_temp) {
  testing::temp_dir dir;
  state_registry reg;
  char b[1] = {1};
  ASSERT_FALSE(reg.add_host_buffer("b", b, 1));
  auto pool = staging_pool::make();
  auto snap = take_snapshot(reg, *pool);
  ASSERT_TRUE(snap);
  auto written = write_shard_files(dir.sub("absent"), 1, 0, 1, *snap);
  ASSERT_FALSE(written);
  EXPECT_NE(describe(written.error()).find(dir.sub("absent")), std::string::npos);
}

// A preallocated file is written over, not replaced; one longer than the
// shard would leave bytes past its end and fails the write instead.
TEST(shard_writer, a_preallocated_file_is_written_over_and_must_end_with_the_shard) {
  testing::temp_dir dir;
  constexpr size_t size = 2 * 4096 + 10;
  auto bytes = testing::pattern(size, 3);
  state_registry reg;
  ASSERT_FALSE(reg.add_host_buffer("w", bytes.data(), bytes.size()));
  auto pool = staging_pool::make();
  auto snap = take_snapshot(reg, *pool);
  ASSERT_TRUE(snap);
  shard_write_options options;
  options.preallocated = dir.sub("spare");
  testing::write_file(options.preallocated, std::string(size, 'x'));
  auto written = write_shard_files(dir.path(), 1, 0, 1, *snap, options);
  ASSERT_TRUE(written) << describe(written.error());
  EXPECT_FALSE(exists(options.preallocated));
  EXPECT_EQ(read_file(dir.sub(shard_data_name(0, 1))), std::string(bytes.begin(), bytes.end()));

  testing::write_file(options.preallocated, std::string(size + 1, 'x'));
  auto longer = write_shard_files(dir.path(), 2, 0, 1, *snap, options);
  ASSERT_FALSE(longer);
  EXPECT_NE(describe(longer.error()).find("written over"), std::string::npos)
      << describe(longer.error());
  EXPECT_FALSE(exists(dir.sub(shard_data_name(0, 1)) + temp_suffix));
}

}  // namespace
}  // namespace lifeboat::checkpoint
