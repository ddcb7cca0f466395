#include "platform/host_resolver.hpp"

#include <gtest/gtest.h>

#include "messages/errors.hpp"
#include "tests/support/loopback_port.hpp"

namespace lifeboat {
namespace {

using namespace std::chrono_literals;

TEST(host_resolver, the_bound_port_of_an_ipv4_or_ipv6_socket) {
  test::held_port v4;
  ASSERT_NE(v4.port(), 0);
  EXPECT_EQ(bound_port(v4.fd()), v4.port());
  test::held_port v6{AF_INET6};
  if (v6.port() != 0) {
    EXPECT_EQ(bound_port(v6.fd()), v6.port());
  }
  EXPECT_EQ(bound_port(-1), 0);
}

TEST(host_resolver, numeric_addresses_pass_through) {
  EXPECT_EQ(*resolve_host("127.0.0.1", 0ms), std::vector<std::string>{"127.0.0.1"});
  EXPECT_EQ(*resolve_host("::1", 0ms), std::vector<std::string>{"::1"});
}

TEST(host_resolver, localhost_resolves) {
  auto addresses = resolve_host("localhost", 5s);
  ASSERT_TRUE(addresses) << describe(addresses.error());
  EXPECT_FALSE(addresses->empty());
}

TEST(host_resolver, unknown_name_fails_within_the_bound) {
  auto start = std::chrono::steady_clock::now();
  auto addresses = resolve_host("no-such-host.invalid", 500ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);
  ASSERT_FALSE(addresses);
  EXPECT_TRUE(addresses.error() == make_error(errc::unavailable) ||
              addresses.error() == make_error(errc::timeout))
      << describe(addresses.error());
  EXPECT_NE(describe(addresses.error()).find("no-such-host.invalid"), std::string::npos);
}

}  // namespace
}  // namespace lifeboat
