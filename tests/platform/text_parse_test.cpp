#include "platform/text_parse.hpp"

#include <gtest/gtest.h>

#include "messages/errors.hpp"

namespace lifeboat {
namespace {

TEST(text_parse, integers_are_whole_and_in_range) {
  EXPECT_EQ(*parse_integer("42", "X", 0, 100), 42);
  EXPECT_EQ(*parse_integer("-3", "X", -5, 5), -3);
  for (auto bad : {"", "4x", " 4", "1e3", "101", "99999999999999999999"}) {
    auto value = parse_integer(bad, "X", 0, 100);
    ASSERT_FALSE(value) << bad;
    EXPECT_EQ(value.error(), make_error(errc::invalid_config));
    EXPECT_NE(describe(value.error()).find(std::string{"X='"} + bad + "'"), std::string::npos);
  }
}

TEST(text_parse, seconds_are_whole_numbers_in_range_in_milliseconds) {
  EXPECT_EQ(*parse_seconds_as_ms("2", "S", 60), 2000);
  EXPECT_EQ(*parse_seconds_as_ms("0.25", "S", 60), 250);
  EXPECT_EQ(*parse_seconds_as_ms("0", "S", 60), 0);
  for (auto bad : {"", "-1", "2s", " 2", "61", "nan", "inf"}) {
    auto value = parse_seconds_as_ms(bad, "S", 60);
    ASSERT_FALSE(value) << bad;
    EXPECT_NE(describe(value.error()).find(std::string{"S='"} + bad + "'"), std::string::npos);
  }
  EXPECT_EQ(describe(parse_seconds_as_ms("61", "S", 60).error()),
            "invalid_config: S='61': expected seconds in [0, 60]");
  EXPECT_NE(describe(parse_seconds_as_ms("9", "S", 0.5).error()).find("in [0, 0.5]"),
            std::string::npos);
}

TEST(text_parse, ports) {
  EXPECT_EQ(*parse_port("65535", "P"), 65535);
  EXPECT_FALSE(parse_port("0", "P"));
  EXPECT_FALSE(parse_port("65536", "P"));
}

TEST(text_parse, endpoints) {
  EXPECT_EQ(parse_endpoint("h:1", "E")->to_string(), "h:1");
  EXPECT_EQ(parse_endpoint("[::1]:8", "E")->host, "::1");
  EXPECT_EQ(parse_endpoint("[::1]:8", "E")->to_string(), "[::1]:8");
  EXPECT_EQ(parse_endpoint("h", "E", 80)->to_string(), "h:80");
  EXPECT_EQ(parse_endpoint("[fe80::1]", "E", 80)->to_string(), "[fe80::1]:80");
  for (auto bad : {"h", ":1", "h:x", "::1:8", "[::1", "[::1]x"})
    EXPECT_FALSE(parse_endpoint(bad, "E")) << bad;
  // A bad port names the whole text, not the port alone.
  for (auto bad : {"h:0", "[::1]:0", "h:65536", "h:x"})
    EXPECT_EQ(
        describe(parse_endpoint(bad, "E").error()),
        std::string{"invalid_config: E='"} + bad + "': expected host:port (a port in [1, 65535])");
}

TEST(text_parse, without_brackets_takes_an_ipv6_address_out_of_them) {
  EXPECT_EQ(without_brackets("[::1]"), "::1");
  EXPECT_EQ(without_brackets("::1"), "::1");
  EXPECT_EQ(without_brackets("10.0.0.1"), "10.0.0.1");
  EXPECT_EQ(without_brackets("[]"), "[]");
  EXPECT_EQ(without_brackets("[::1"), "[::1");
}

TEST(text_parse, trim) {
  EXPECT_EQ(trim("  a b\n"), "a b");
  EXPECT_EQ(trim(" \t\n"), "");
}

}  // namespace
}  // namespace lifeboat
