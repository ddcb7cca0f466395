#include "checkpoint/framed_file.hpp"

#include <gtest/gtest.h>

#include "messages/checkpoint.pb.h"
#include "messages/errors.hpp"

namespace lifeboat::checkpoint {
namespace {

wire::ShardIndex sample() {
  wire::ShardIndex index;
  index.set_step(7);
  index.set_data_file("shard-00000-of-00001.data");
  return index;
}

TEST(framed_file, round_trips) {
  auto bytes = encode_framed(index_magic, sample());
  wire::ShardIndex back;
  ASSERT_FALSE(decode_framed(index_magic, bytes, "f", back));
  EXPECT_EQ(back.step(), 7);
}

TEST(framed_file, any_flipped_byte_is_corrupt) {
  auto bytes = encode_framed(index_magic, sample());
  for (size_t i = 0; i < bytes.size(); ++i) {
    auto garbled = bytes;
    garbled[i] ^= 0x01;
    wire::ShardIndex back;
    auto err = decode_framed(index_magic, garbled, "dir/f", back);
    ASSERT_EQ(err, make_error(errc::corrupt)) << "byte " << i;
    EXPECT_NE(describe(err).find("corrupt file dir/f"), std::string::npos);
  }
}

TEST(framed_file, truncation_and_wrong_magic_are_corrupt) {
  auto bytes = encode_framed(index_magic, sample());
  wire::ShardIndex back;
  EXPECT_EQ(decode_framed(index_magic, bytes.substr(0, bytes.size() - 1), "f", back),
            make_error(errc::corrupt));
  EXPECT_EQ(decode_framed(index_magic, bytes.substr(0, 4), "f", back), make_error(errc::corrupt));
  EXPECT_EQ(decode_framed(manifest_magic, bytes, "f", back), make_error(errc::corrupt));
}

}  // namespace
}  // namespace lifeboat::checkpoint
