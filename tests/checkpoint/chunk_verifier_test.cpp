#include "checkpoint/chunk_verifier.hpp"

#include <xxhash.h>

#include <gtest/gtest.h>

#include "messages/errors.hpp"
#include "tests/checkpoint/test_support.hpp"

namespace lifeboat::checkpoint {
namespace {

TEST(chunk_verifier, a_checksum_over_several_parts_equals_the_whole) {
  auto bytes = testing::pattern(1000, 3);
  std::vector<iovec> parts{{bytes.data(), 10}, {bytes.data() + 10, 990}};
  EXPECT_EQ(checksum_of(parts), XXH3_64bits(bytes.data(), bytes.size()));
}

TEST(chunk_verifier, passes_matching_chunks_and_names_the_first_bad_one) {
  auto bytes = testing::pattern(3000, 4);
  chunk_verifier verifier{"f.data"};
  for (uint64_t i = 0; i < 3; ++i) {
    auto* chunk = bytes.data() + i * 1000;
    auto expected = XXH3_64bits(chunk, 1000) + (i == 1 ? 1 : 0);
    verifier.submit(i, i * 1000, (i + 1) * 1000, {{chunk, 1000}}, expected);
  }
  auto err = verifier.finish();
  EXPECT_TRUE(verifier.failed());
  EXPECT_EQ(describe(err),
            "corrupt: corrupt file f.data: checksum mismatch in chunk 1 (bytes 1000..2000)");
}

TEST(chunk_verifier, nothing_submitted_is_fine) {
  chunk_verifier verifier{"f"};
  EXPECT_FALSE(verifier.finish());
  EXPECT_FALSE(verifier.failed());
}

}  // namespace
}  // namespace lifeboat::checkpoint
