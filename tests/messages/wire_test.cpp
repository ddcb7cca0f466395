#include "messages/wire.hpp"

#include <gtest/gtest.h>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "messages/preemption.pb.h"

namespace lifeboat::wire {
namespace {

TEST(wire, proto_messages_round_trip_through_caf_serialization) {
  Notice in;
  in.set_rank(5);
  in.set_source("signal:SIGTERM");
  in.set_deadline_unix_ms(1234567);
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  ASSERT_FALSE(inspect(sink, in));
  Notice out;
  caf::binary_deserializer source{nullptr, buf};
  ASSERT_FALSE(inspect(source, out));
  EXPECT_EQ(out.rank(), 5);
  EXPECT_EQ(out.source(), "signal:SIGTERM");
  EXPECT_EQ(out.deadline_unix_ms(), 1234567);
}

TEST(wire, garbage_bytes_are_reported_as_corrupt) {
  std::string garbage = "\xff\xff\xff\xff\xff\xff";
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  ASSERT_FALSE(sink(garbage));
  Notice out;
  caf::binary_deserializer source{nullptr, buf};
  auto err = inspect(source, out);
  ASSERT_TRUE(err);
  EXPECT_EQ(err.code(), static_cast<uint8_t>(errc::corrupt));
}

}  // namespace
}  // namespace lifeboat::wire
