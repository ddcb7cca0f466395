#include "messages/address.hpp"

#include <gtest/gtest.h>

using lifeboat::host_port;

TEST(address, a_name_or_an_ipv4_address_is_followed_by_its_port) {
  EXPECT_EQ(host_port("127.0.0.1", 5000), "127.0.0.1:5000");
  EXPECT_EQ(host_port("node-3.cluster", 80), "node-3.cluster:80");
}

TEST(address, an_ipv6_address_is_put_in_brackets) {
  EXPECT_EQ(host_port("::1", 5000), "[::1]:5000");
  EXPECT_EQ(host_port("::", 1), "[::]:1");
  EXPECT_EQ(host_port("fe80::1", 65535), "[fe80::1]:65535");
}
