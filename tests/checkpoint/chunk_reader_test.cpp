#include "checkpoint/chunk_reader.hpp"

#include <xxhash.h>

#include <gtest/gtest.h>

#include "messages/errors.hpp"
#include "tests/checkpoint/test_support.hpp"

namespace lifeboat::checkpoint {
namespace {

// A chunk of `bytes` [begin, end) read into `dst` (same offsets) in two parts.
chunk_read split_chunk(const std::vector<char>& bytes, std::vector<char>& dst, uint64_t index,
                       uint64_t begin, uint64_t end) {
  auto middle = begin + (end - begin) / 3;
  return {index,
          begin,
          {{dst.data() + begin, middle - begin}, {dst.data() + middle, end - middle}},
          XXH3_64bits(bytes.data() + begin, end - begin)};
}

class chunk_reader_test : public ::testing::Test {
 protected:
  // Chunks of 1.5 MiB: more than one hash block each, and enough of them for
  // both halves.
  static constexpr uint64_t chunk = (uint64_t{3} << 20) / 2;
  static constexpr uint64_t chunks = 5;

  void SetUp() override {
    bytes_ = testing::pattern(chunk * chunks - 100, 7);
    testing::write_file(path_, std::string{bytes_.begin(), bytes_.end()});
    dst_.assign(bytes_.size(), '\0');
    for (uint64_t i = 0; i < chunks; ++i)
      plan_.push_back(split_chunk(bytes_, dst_, i, i * chunk,
                                  std::min<uint64_t>(bytes_.size(), (i + 1) * chunk)));
  }

  testing::temp_dir dir_;
  std::string path_ = dir_.sub("shard.data");
  std::vector<char> bytes_;
  std::vector<char> dst_;
  std::vector<chunk_read> plan_;
};

TEST_F(chunk_reader_test, reads_every_chunk_into_its_parts) {
  EXPECT_FALSE(read_chunks(path_, plan_));
  EXPECT_EQ(dst_, bytes_);
}

TEST_F(chunk_reader_test, names_the_file_and_the_bad_chunk) {
  plan_[3].expected += 1;
  EXPECT_EQ(describe(read_chunks(path_, plan_)),
            "corrupt: corrupt file " + path_ + ": checksum mismatch in chunk 3 (bytes " +
                std::to_string(3 * chunk) + ".." + std::to_string(4 * chunk) + ")");
}

TEST_F(chunk_reader_test, of_a_bad_chunk_in_each_half_the_first_is_named) {
  plan_[0].expected += 1;
  plan_[4].expected += 1;
  auto text = describe(read_chunks(path_, plan_));
  EXPECT_NE(text.find("checksum mismatch in chunk 0 "), std::string::npos) << text;
}

TEST_F(chunk_reader_test, a_truncated_file_is_corrupt) {
  ::truncate(path_.c_str(), static_cast<off_t>(2 * chunk + 10));
  EXPECT_EQ(describe(read_chunks(path_, plan_)), "corrupt: file " + path_ + " is truncated");
}

TEST_F(chunk_reader_test, a_missing_file_is_an_io_error) {
  ::unlink(path_.c_str());
  auto err = read_chunks(path_, plan_);
  EXPECT_EQ(err.code(), static_cast<uint8_t>(errc::io_error)) << describe(err);
  EXPECT_NE(describe(err).find(path_), std::string::npos);
}

TEST_F(chunk_reader_test, a_single_chunk_and_no_chunk_read_fine) {
  plan_.resize(1);
  EXPECT_FALSE(read_chunks(path_, plan_));
  EXPECT_TRUE(std::equal(bytes_.begin(), bytes_.begin() + chunk, dst_.begin()));
  EXPECT_FALSE(read_chunks(path_, {}));
}

// The file's bytes from a stream instead of the file: what a fetch from the
// peer tier reads.
class receive_chunks_test : public chunk_reader_test {
 protected:
  // Reads bytes_ in order, as a connection would carry them.
  read_exact_fn stream() {
    return [this](char* data, size_t size) -> caf::error {
      if (size > bytes_.size() - sent_) return make_error(errc::io_error, "the stream ended");
      std::copy(bytes_.begin() + static_cast<std::ptrdiff_t>(sent_),
                bytes_.begin() + static_cast<std::ptrdiff_t>(sent_ + size), data);
      sent_ += size;
      return {};
    };
  }

  size_t sent_ = 0;
};

TEST_F(receive_chunks_test, receives_every_chunk_into_its_parts) {
  EXPECT_FALSE(receive_chunks(stream(), "peer:data", plan_));
  EXPECT_EQ(dst_, bytes_);
}

TEST_F(receive_chunks_test, names_the_source_and_the_bad_chunk_and_stops_there) {
  plan_[2].expected += 1;
  EXPECT_EQ(describe(receive_chunks(stream(), "peer:data", plan_)),
            "corrupt: corrupt file peer:data: checksum mismatch in chunk 2 (bytes " +
                std::to_string(2 * chunk) + ".." + std::to_string(3 * chunk) + ")");
  EXPECT_EQ(sent_, 3 * chunk);
}

TEST_F(receive_chunks_test, a_gap_between_chunks_is_corrupt) {
  // The second chunk's first part left out: the stream would shift.
  // Its checksum is that of the bytes it then reads, so only the gap is wrong.
  plan_[1].parts.erase(plan_[1].parts.begin());
  plan_[1].expected = XXH3_64bits(bytes_.data() + chunk, plan_[1].parts[0].iov_len);
  auto err = receive_chunks(stream(), "peer:data", plan_);
  EXPECT_EQ(err, make_error(errc::corrupt));
  EXPECT_NE(describe(err).find("chunk 2 begins at byte"), std::string::npos) << describe(err);
}

TEST_F(receive_chunks_test, the_streams_error_is_returned) {
  bytes_.resize(chunk);
  EXPECT_EQ(describe(receive_chunks(stream(), "peer:data", plan_)), "io_error: the stream ended");
}

}  // namespace
}  // namespace lifeboat::checkpoint
