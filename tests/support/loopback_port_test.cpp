#include "tests/support/loopback_port.hpp"

#include <cerrno>

#include <gtest/gtest.h>

namespace lifeboat::test {
namespace {

// Binds a listener to `port` on 127.0.0.1 as a server would (SO_REUSEADDR
// on); the errno of the failure, or 0.
int listen_error(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int error =
      ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 && ::listen(fd, 1) == 0
          ? 0
          : errno;
  ::close(fd);
  return error;
}

TEST(loopback_port, a_held_port_is_busy_until_released) {
  uint16_t port = 0;
  {
    held_port held;
    port = held.port();
    ASSERT_NE(port, 0);
    EXPECT_EQ(listen_error(port), EADDRINUSE);
  }
  EXPECT_EQ(listen_error(port), 0);
}

TEST(loopback_port, an_unused_port_can_be_listened_on) {
  auto port = unused_port();
  ASSERT_NE(port, 0);
  EXPECT_EQ(listen_error(port), 0);
}

// A port from the ephemeral range may be handed to another connection's local
// end before the test's server binds it.
TEST(loopback_port, an_unused_port_lies_below_the_kernels_ephemeral_range) {
  for (int family : {AF_INET, AF_INET6}) {
    for (int i = 0; i < 20; ++i) {
      auto port = unused_port(family);
      if (family == AF_INET6 && port == 0) break;
      ASSERT_NE(port, 0);
      EXPECT_LT(port, first_ephemeral_port());
    }
  }
}

}  // namespace
}  // namespace lifeboat::test
