#include "messages/errors.hpp"

#include <gtest/gtest.h>

namespace lifeboat {
namespace {

TEST(errors, codes_compare_equal_regardless_of_context) {
  auto plain = make_error(errc::already_exists);
  auto with_context = make_error(errc::already_exists, "key /a");
  EXPECT_EQ(plain.code(), with_context.code());
  EXPECT_EQ(plain.category(), with_context.category());
  EXPECT_NE(plain.code(), make_error(errc::timeout).code());
}

TEST(errors, describe_names_the_code_and_the_context) {
  EXPECT_EQ(describe(make_error(errc::corrupt, "shard 3")), "corrupt: shard 3");
  EXPECT_EQ(describe(make_error(errc::timeout)), "timeout");
  EXPECT_EQ(describe(caf::error{}), "ok");
}

TEST(errors, a_wrapped_error_names_its_code_once) {
  auto inner = make_error(errc::io_error, "mkdir /d: No such file or directory");
  EXPECT_EQ(describe(wrap_error(errc::io_error, "unusable checkpoint directory", inner)),
            "io_error: unusable checkpoint directory: mkdir /d: No such file or directory");
  // Another code stays in the text, as does a code without a message.
  EXPECT_EQ(describe(wrap_error(errc::unavailable, "NCCL barrier", inner)),
            "unavailable: NCCL barrier: io_error: mkdir /d: No such file or directory");
  EXPECT_EQ(describe(wrap_error(errc::timeout, "join", make_error(errc::timeout))),
            "timeout: join: timeout");
  EXPECT_EQ(wrap_error(errc::unavailable, "NCCL barrier", inner).code(),
            static_cast<uint8_t>(errc::unavailable));
}

}  // namespace
}  // namespace lifeboat
