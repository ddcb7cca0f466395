#include "actors/coordination/coordination_frame.hpp"

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

TEST(coordination_frame, one_chunk_may_hold_several_frames_and_part_of_the_next) {
  auto first = encode_frame(sample());
  wire::Envelope second_env;
  second_env.mutable_heartbeat()->set_step(42);
  auto second = encode_frame(second_env);
  std::string stream(first.begin(), first.end());
  stream.append(second.begin(), second.end());
  stream.append(first.begin(), first.end());
  // The first read ends three bytes into the third frame's body.
  auto cut = first.size() + second.size() + frame_header_bytes + 3;
  frame_splitter split;
  wire::Envelope out;
  split.append(stream.data(), cut);
  ASSERT_EQ(split.next(out), frame_splitter::status::frame);
  EXPECT_EQ(out.insert().id(), 7u);
  ASSERT_EQ(split.next(out), frame_splitter::status::frame);
  EXPECT_EQ(out.heartbeat().step(), 42);
  EXPECT_EQ(split.next(out), frame_splitter::status::need_more);
  split.append(stream.data() + cut, stream.size() - cut);
  ASSERT_EQ(split.next(out), frame_splitter::status::frame);
  EXPECT_EQ(out.insert().value(), std::string("\0v", 2));
  EXPECT_EQ(split.next(out), frame_splitter::status::need_more);
}

TEST(coordination_frame, oversized_empty_and_garbage_frames_are_rejected) {
  wire::Envelope out;
  // Refused from the header alone: the body is never waited for.
  frame_splitter big;
  const char big_header[4] = {0x7f, 0, 0, 0};
  big.append(big_header, 4);
  EXPECT_EQ(big.next(out), frame_splitter::status::oversized);
  frame_splitter empty;
  const char zero[4] = {0, 0, 0, 0};
  empty.append(zero, 4);
  EXPECT_EQ(empty.next(out), frame_splitter::status::malformed);
  frame_splitter garbage;
  const char header[4] = {0, 0, 0, 3};
  const char body[3] = {'\xff', '\xff', '\xff'};
  garbage.append(header, 4);
  ASSERT_EQ(garbage.next(out), frame_splitter::status::need_more);
  garbage.append(body, 3);
  EXPECT_EQ(garbage.next(out), frame_splitter::status::malformed);
}

}  // namespace
