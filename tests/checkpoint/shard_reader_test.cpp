#include "checkpoint/shard_reader.hpp"

#include <gtest/gtest.h>

#include "checkpoint/framed_file.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/shard_writer.hpp"
#include "messages/errors.hpp"
#include "tests/checkpoint/test_support.hpp"

namespace lifeboat::checkpoint {
namespace {

constexpr uint64_t small_chunk = 1024;

class shard_reader_test : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = testing::pattern(5000, 1);
    ASSERT_FALSE(saver_.add_host_buffer("w", saved_.data(), saved_.size()));
    ASSERT_FALSE(saver_.add_callbacks(
        "u", [] { return std::string{"user"}; }, [](const std::string&) {}));
    auto snap = take_snapshot(saver_, *pool_);
    ASSERT_TRUE(snap);
    shard_write_options options;
    options.chunk_size = small_chunk;
    ASSERT_TRUE(write_shard_files(dir_.path(), 1, 0, 1, *snap, options));
    ASSERT_FALSE(write_manifest(*posix_file_system(), dir_.path(), 1, 1, 0));
    auto manifest = read_manifest(dir_.path(), 1);
    ASSERT_TRUE(manifest);
    manifest_ = *manifest;
    auto index = read_shard_index(dir_.path(), manifest_.shards(0));
    ASSERT_TRUE(index);
    index_ = *index;
  }

  // A registry like the saved one that loads into `loaded` and `user`.
  static void register_target(state_registry& reg, std::vector<char>& loaded, std::string& user) {
    ASSERT_FALSE(reg.add_host_buffer("w", loaded.data(), loaded.size()));
    ASSERT_FALSE(reg.add_callbacks(
        "u", [] { return std::string{}; }, [&user](const std::string& b) { user = b; }));
  }

  testing::temp_dir dir_;
  std::shared_ptr<staging_pool> pool_ = staging_pool::make();
  std::vector<char> saved_;
  state_registry saver_;
  wire::CheckpointManifest manifest_;
  wire::ShardIndex index_;
};

TEST_F(shard_reader_test, loads_into_buffers_and_callbacks) {
  std::vector<char> loaded(5000);
  std::string user;
  state_registry reg;
  register_target(reg, loaded, user);
  ASSERT_FALSE(verify_shard_files(dir_.path(), manifest_));
  ASSERT_FALSE(check_buffer_table(index_, reg));
  bool touched = false;
  ASSERT_FALSE(load_shard(dir_.path(), index_, manifest_.shards(0).chunks(), reg, *pool_, touched));
  EXPECT_EQ(loaded, saved_);
  EXPECT_EQ(user, "user");
}

// A reader that registers only the callbacks ("u", the file's last 4 bytes,
// in chunk 4 after the end of "w"): the chunks of "w" alone are not read,
// and the one they share is verified whole.
TEST_F(shard_reader_test, a_subset_load_reads_only_the_chunks_of_what_is_registered) {
  std::string user;
  state_registry reg;
  ASSERT_FALSE(reg.add_callbacks(
      "u", [] { return std::string{}; }, [&user](const std::string& b) { user = b; }));
  auto subset = subset_registry(index_, reg);
  ASSERT_TRUE(subset) << describe(subset.error());
  ASSERT_EQ(subset->registry.buffers().size(), 2u);
  EXPECT_EQ(subset->registry.buffers()[0].name, "w");
  EXPECT_EQ(subset->dropped, (std::vector<bool>{true, false}));
  auto load = [&] {
    bool touched = false;
    return load_shard(dir_.path(), index_, manifest_.shards(0).chunks(), subset->registry, *pool_,
                      touched, subset->dropped);
  };
  ASSERT_FALSE(load());
  EXPECT_EQ(user, "user");

  auto path = dir_.sub(shard_data_name(0, 1));
  auto bytes = testing::read_file(path);
  bytes[100] ^= 0x01;  // chunk 0: "w" alone
  testing::write_file(path, bytes);
  user.clear();
  ASSERT_FALSE(load());
  EXPECT_EQ(user, "user");
  bytes[4500] ^= 0x01;  // chunk 4: the end of "w" and "u"
  testing::write_file(path, bytes);
  auto err = load();
  EXPECT_EQ(err, make_error(errc::corrupt));
  EXPECT_NE(describe(err).find("chunk 4"), std::string::npos) << describe(err);
}

// A reader of "w" alone: the last chunk's bytes of "u" go to scratch memory.
TEST_F(shard_reader_test, a_subset_load_drops_the_bytes_it_shares_a_chunk_with) {
  std::vector<char> loaded(5000);
  state_registry reg;
  ASSERT_FALSE(reg.add_host_buffer("w", loaded.data(), loaded.size()));
  auto subset = subset_registry(index_, reg);
  ASSERT_TRUE(subset) << describe(subset.error());
  bool touched = false;
  ASSERT_FALSE(load_shard(dir_.path(), index_, manifest_.shards(0).chunks(), subset->registry,
                          *pool_, touched, subset->dropped));
  EXPECT_EQ(loaded, saved_);
}

TEST_F(shard_reader_test, a_subset_registry_refuses_buffers_the_shard_lacks_or_holds_otherwise) {
  std::vector<char> small(10), extra(4);
  state_registry reg;
  ASSERT_FALSE(reg.add_host_buffer("w", small.data(), small.size()));
  ASSERT_FALSE(reg.add_host_buffer("x", extra.data(), extra.size()));
  ASSERT_FALSE(reg.add_host_buffer("u", extra.data(), extra.size()));
  auto subset = subset_registry(index_, reg);
  ASSERT_FALSE(subset);
  EXPECT_EQ(describe(subset.error()),
            "invalid_config: checkpoint state does not hold the registered buffers: 'w' has 5000 "
            "bytes in the checkpoint but 10 registered; 'u' is callbacks in the checkpoint but "
            "host registered; 'x' is registered but not in the checkpoint");
}

TEST_F(shard_reader_test, a_flipped_byte_names_the_file_and_the_chunk) {
  auto path = dir_.sub(shard_data_name(0, 1));
  auto bytes = testing::read_file(path);
  bytes[2500] ^= 0x01;
  testing::write_file(path, bytes);
  std::vector<char> loaded(5000);
  std::string user;
  state_registry reg;
  register_target(reg, loaded, user);
  bool touched = false;
  auto err = load_shard(dir_.path(), index_, manifest_.shards(0).chunks(), reg, *pool_, touched);
  ASSERT_EQ(err, make_error(errc::corrupt));
  EXPECT_EQ(describe(err),
            "corrupt: corrupt file " + path + ": checksum mismatch in chunk 2 (bytes 2048..3072)");
  EXPECT_TRUE(touched);
  // Callback state is handed over only after the whole shard verified.
  EXPECT_EQ(user, "");
}

TEST_F(shard_reader_test, mismatched_registries_are_described) {
  std::vector<char> wrong(4000);
  state_registry reg;
  ASSERT_FALSE(reg.add_host_buffer("w", wrong.data(), wrong.size()));
  ASSERT_FALSE(reg.add_host_buffer("extra", wrong.data(), 1));
  auto err = check_buffer_table(index_, reg);
  ASSERT_EQ(err, make_error(errc::invalid_config));
  EXPECT_EQ(describe(err),
            "invalid_config: checkpoint state does not match the registered buffers: "
            "'w' has 5000 bytes in the checkpoint but 4000 registered; "
            "buffer 1 is 'u' in the checkpoint but 'extra' registered");
  state_registry fewer;
  ASSERT_FALSE(fewer.add_host_buffer("w", wrong.data(), 5000));
  EXPECT_NE(describe(check_buffer_table(index_, fewer))
                .find("checkpoint has 'u', which is not "
                      "registered"),
            std::string::npos);
}

TEST_F(shard_reader_test, a_truncated_data_file_fails_the_cheap_check) {
  auto path = dir_.sub(shard_data_name(0, 1));
  auto bytes = testing::read_file(path);
  testing::write_file(path, bytes.substr(0, 100));
  auto err = verify_shard_files(dir_.path(), manifest_);
  ASSERT_EQ(err, make_error(errc::corrupt));
  EXPECT_NE(describe(err).find(path), std::string::npos);
}

// Sizes in an index or manifest come from whoever could write the checkpoint
// directory: negative ones, and offsets whose sum with a size wraps around,
// are corrupt, never a read outside the chunk table or the buffers (the first
// is tests/fuzz/corpus/fuzz_shard_index/regression-negative-chunk-size).
TEST_F(shard_reader_test, negative_chunk_sizes_and_wrapping_offsets_are_corrupt) {
  std::vector<char> loaded(5000);
  std::string user;
  state_registry reg;
  register_target(reg, loaded, user);
  bool touched = false;
  wire::ChunkTable no_chunks;
  no_chunks.set_chunk_size(-1);
  auto err = load_shard(dir_.path(), index_, no_chunks, reg, *pool_, touched);
  EXPECT_EQ(err, make_error(errc::corrupt)) << describe(err);
  auto wrapping = index_;
  // As unsigned, offset + size is 0: inside the file, had the sum been trusted.
  wrapping.mutable_buffers(0)->set_offset(-wrapping.buffers(0).size());
  err = load_shard(dir_.path(), wrapping, manifest_.shards(0).chunks(), reg, *pool_, touched);
  EXPECT_EQ(err, make_error(errc::corrupt)) << describe(err);
  EXPECT_FALSE(touched);
}

// Bytes of no buffer (between two, or after the last) are in no writer's
// file: a load, which hashes what lands in buffers, and the check of the
// whole file must both refuse them, and say so (the second is
// tests/fuzz/corpus/fuzz_shard_index/regression-bytes-of-no-buffer).
TEST_F(shard_reader_test, bytes_that_belong_to_no_buffer_are_corrupt) {
  auto path = dir_.sub(shard_data_name(0, 1));
  auto gap = index_;
  gap.mutable_buffers(0)->set_size(4990);
  auto trailing = index_;
  trailing.mutable_buffers(1)->set_size(2);
  for (auto& [index, why] :
       {std::pair{gap, "buffer 'u' begins at byte 5000, the one before it ends at 4990"},
        std::pair{trailing, "the buffers end at byte 5002, the data at 5004"}}) {
    auto expected = "corrupt: corrupt file " + path + ": " + why;
    EXPECT_EQ(describe(verify_shard_data(dir_.path(), index, manifest_.shards(0).chunks())),
              expected);
    std::vector<char> loaded(static_cast<size_t>(index.buffers(0).size()));
    std::string user;
    state_registry reg;
    register_target(reg, loaded, user);
    bool touched = false;
    EXPECT_EQ(describe(load_shard(dir_.path(), index, manifest_.shards(0).chunks(), reg, *pool_,
                                  touched)),
              expected);
    EXPECT_FALSE(touched);
  }
}

// A check of the shard that keeps none of its bytes: every chunk read and
// hashed, the last (shorter) one included, in the file's order.
TEST_F(shard_reader_test, verify_shard_data_checks_every_chunk_without_a_registry) {
  auto& chunks = manifest_.shards(0).chunks();
  ASSERT_FALSE(verify_shard_data(dir_.path(), index_, chunks));
  auto path = dir_.sub(shard_data_name(0, 1));
  auto good = testing::read_file(path);
  for (auto [offset, range] :
       {std::pair{100, "chunk 0 (bytes 0..1024)"}, std::pair{5003, "chunk 4 (bytes 4096..5004)"}}) {
    auto bytes = good;
    bytes[offset] ^= 0x01;
    testing::write_file(path, bytes);
    EXPECT_EQ(describe(verify_shard_data(dir_.path(), index_, chunks)),
              "corrupt: corrupt file " + path + ": checksum mismatch in " + range);
  }
  testing::write_file(path, good.substr(0, 4000));
  EXPECT_EQ(describe(verify_shard_data(dir_.path(), index_, chunks)),
            "corrupt: corrupt file " + path + ": 4000 bytes, index says 5004");
  testing::write_file(path, good);
  wire::ChunkTable no_chunks;
  no_chunks.set_chunk_size(-1);
  EXPECT_EQ(verify_shard_data(dir_.path(), index_, no_chunks), make_error(errc::corrupt));
}

// The same check in parts, as threads make it side by side: the chunks to
// read, then each range alone, naming the first bad chunk in it.
TEST_F(shard_reader_test, verify_shard_chunks_checks_its_range_only) {
  auto& chunks = manifest_.shards(0).chunks();
  auto count = shard_chunk_count(dir_.path(), index_, chunks);
  ASSERT_TRUE(count) << describe(count.error());
  EXPECT_EQ(*count, 5u);
  auto path = dir_.sub(shard_data_name(0, 1));
  auto bytes = testing::read_file(path);
  bytes[100] ^= 0x01;   // chunk 0
  bytes[2100] ^= 0x01;  // chunk 2
  testing::write_file(path, bytes);
  EXPECT_FALSE(verify_shard_chunks(dir_.path(), index_, chunks, 1, 2));
  EXPECT_FALSE(verify_shard_chunks(dir_.path(), index_, chunks, 3, 5));
  EXPECT_FALSE(verify_shard_chunks(dir_.path(), index_, chunks, 4, 4));
  EXPECT_EQ(describe(verify_shard_chunks(dir_.path(), index_, chunks, 1, 5)),
            "corrupt: corrupt file " + path + ": checksum mismatch in chunk 2 (bytes 2048..3072)");
  EXPECT_EQ(describe(verify_shard_chunks(dir_.path(), index_, chunks, 0, 5)),
            "corrupt: corrupt file " + path + ": checksum mismatch in chunk 0 (bytes 0..1024)");
}

}  // namespace
}  // namespace lifeboat::checkpoint
