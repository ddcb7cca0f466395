#include "messages/log.hpp"

#include <gtest/gtest.h>

namespace lifeboat {
namespace {

TEST(log, writes_one_prefixed_line_to_stderr) {
  set_log_rank(3);
  testing::internal::CaptureStderr();
  log(log_level::warning, "checkpoint_writer", "saved ", 42, " bytes");
  auto out = testing::internal::GetCapturedStderr();
  EXPECT_EQ(out, "lifeboat[rank 3] checkpoint_writer: warning: saved 42 bytes\n");
  set_log_rank(-1);
}

TEST(log, drops_lines_below_the_level) {
  set_log_level(log_level::warning);
  testing::internal::CaptureStderr();
  log(log_level::info, "x", "hidden");
  auto out = testing::internal::GetCapturedStderr();
  set_log_level(log_level::info);
  EXPECT_EQ(out, "");
}

}  // namespace
}  // namespace lifeboat
