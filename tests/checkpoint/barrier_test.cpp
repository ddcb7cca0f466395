#include "checkpoint/barrier.hpp"

#include <gtest/gtest.h>

#include "checkpoint/device_memory.hpp"
#include "messages/errors.hpp"

namespace lifeboat::checkpoint {
namespace {

TEST(barrier, the_nccl_factory_reports_unavailable_without_a_gpu) {
  if (!device::available()) GTEST_SKIP() << "a CUDA device is present; see nccl_barrier tests";
  auto usable = nccl_barrier_usable();
  EXPECT_EQ(usable, make_error(errc::unavailable));
  EXPECT_NE(describe(usable).find("NCCL barrier"), std::string::npos);
  auto bar = make_nccl_barrier(nullptr, std::chrono::seconds{1});
  ASSERT_FALSE(bar);
  EXPECT_EQ(bar.error(), make_error(errc::unavailable));
  EXPECT_NE(describe(bar.error()).find("NCCL barrier"), std::string::npos);
}

}  // namespace
}  // namespace lifeboat::checkpoint
