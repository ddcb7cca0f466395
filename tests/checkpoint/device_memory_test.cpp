#include "checkpoint/device_memory.hpp"

#include <gtest/gtest.h>

#include "checkpoint/state_registry.hpp"
#include "messages/errors.hpp"

namespace lifeboat::checkpoint {
namespace {

TEST(device_memory, without_a_device_every_call_is_unavailable) {
  if (!device::available()) GTEST_SKIP() << "a CUDA device is present";
  char host[8];
  EXPECT_EQ(device::copy_to_host(host, host, sizeof(host)), make_error(errc::unavailable));
  EXPECT_EQ(device::copy_to_device(host, host, sizeof(host)), make_error(errc::unavailable));
  state_registry reg;
  auto err = reg.add_device_buffer("d", host, sizeof(host));
  EXPECT_EQ(err, make_error(errc::unavailable));
  EXPECT_NE(describe(err).find("device buffer 'd' cannot be checkpointed"), std::string::npos);
  EXPECT_TRUE(reg.buffers().empty());
}

}  // namespace
}  // namespace lifeboat::checkpoint
