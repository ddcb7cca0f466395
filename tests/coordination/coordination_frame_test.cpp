#include "actors/coordination_frame.hpp"

#include <gtest/gtest.h>

using namespace lifeboat;

namespace {

wire::Envelope sample() {
  wire::Envelope env;
  env.mutable_insert()->set_id(7);
  env.mutable_insert()->set_key("k");
  env.mutable_insert()->set_value(std::string("\0v", 2));
  return env;
}

TEST(coordination_frame, round_trips_through_the_splitter) {
  auto bytes = encode_frame(sample());
  ASSERT_EQ(decode_frame_length(bytes.data()), bytes.size() - frame_header_bytes);
  frame_splitter split;
  wire::Envelope out;
  // Byte by byte: a frame is only complete with its last byte.
  for (size_t i = 0; i + 1 < bytes.size(); ++i) {
    split.append(&bytes[i], 1);
    EXPECT_EQ(split.next(out), frame_splitter::status::need_more);
  }
  split.append(&bytes.back(), 1);
  ASSERT_EQ(split.next(out), frame_splitter::status::frame);
  EXPECT_EQ(out.insert().value(), std::string("\0v", 2));
}

TEST(coordination_frame, reader_reads_header_then_body) {
  auto bytes = encode_frame(sample());
  frame_reader reader;
  wire::Envelope out;
  EXPECT_EQ(reader.next_read(), frame_header_bytes);
  EXPECT_EQ(reader.consume(bytes.data(), frame_header_bytes, out), frame_reader::status::read_more);
  EXPECT_EQ(reader.next_read(), bytes.size() - frame_header_bytes);
  EXPECT_EQ(reader.consume(bytes.data() + frame_header_bytes, reader.next_read(), out),
            frame_reader::status::frame);
  EXPECT_EQ(out.insert().id(), 7u);
  EXPECT_EQ(reader.next_read(), frame_header_bytes);
}

TEST(coordination_frame, oversized_empty_and_garbage_frames_are_rejected) {
  frame_reader reader;
  wire::Envelope out;
  const char big[4] = {0x7f, 0, 0, 0};
  EXPECT_EQ(reader.consume(big, 4, out), frame_reader::status::oversized);
  frame_reader empty;
  const char zero[4] = {0, 0, 0, 0};
  EXPECT_EQ(empty.consume(zero, 4, out), frame_reader::status::malformed);
  frame_reader garbage;
  const char header[4] = {0, 0, 0, 3};
  const char body[3] = {'\xff', '\xff', '\xff'};
  ASSERT_EQ(garbage.consume(header, 4, out), frame_reader::status::read_more);
  EXPECT_EQ(garbage.consume(body, 3, out), frame_reader::status::malformed);
}

}  // namespace
