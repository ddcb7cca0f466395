#include "checkpoint/host_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "messages/errors.hpp"

namespace lifeboat::checkpoint {
namespace {

size_t page_size() { return static_cast<size_t>(::sysconf(_SC_PAGESIZE)); }

// How many of the mapping's pages are resident, by mincore.
size_t resident_pages(const host_memory& memory) {
  std::vector<unsigned char> flags(memory.size() / page_size());
  EXPECT_EQ(::mincore(const_cast<char*>(memory.data()), memory.size(), flags.data()), 0);
  return static_cast<size_t>(
      std::count_if(flags.begin(), flags.end(), [](unsigned char f) { return (f & 1) != 0; }));
}

TEST(host_memory, rounds_up_to_whole_pages_and_is_zeroed) {
  auto memory = host_memory::allocate(3 * page_size() + 1);
  ASSERT_TRUE(memory) << describe(memory.error());
  EXPECT_EQ(memory->size(), 4 * page_size());
  EXPECT_TRUE(
      std::all_of(memory->data(), memory->data() + memory->size(), [](char c) { return c == 0; }));
  memory->data()[memory->size() - 1] = 7;
  EXPECT_EQ(memory->data()[memory->size() - 1], 7);
}

TEST(host_memory, every_page_is_resident_before_the_first_write) {
  auto memory = host_memory::allocate(64 << 20);
  ASSERT_TRUE(memory) << describe(memory.error());
  EXPECT_EQ(resident_pages(*memory), memory->size() / page_size());
}

TEST(host_memory, zero_bytes_is_one_page) {
  auto memory = host_memory::allocate(0);
  ASSERT_TRUE(memory) << describe(memory.error());
  EXPECT_EQ(memory->size(), page_size());
}

TEST(host_memory, a_move_hands_the_mapping_over) {
  auto memory = host_memory::allocate(page_size());
  ASSERT_TRUE(memory) << describe(memory.error());
  char* data = memory->data();
  host_memory taken{std::move(*memory)};
  EXPECT_EQ(taken.data(), data);
  EXPECT_EQ(memory->data(), nullptr);
  EXPECT_EQ(memory->size(), 0u);
  host_memory other;
  other = std::move(taken);
  EXPECT_EQ(other.data(), data);
  EXPECT_EQ(taken.data(), nullptr);
}

TEST(host_memory, a_refused_mapping_is_an_io_error_with_the_size) {
  auto memory = host_memory::allocate(uint64_t{1} << 62);
  ASSERT_FALSE(memory);
  EXPECT_EQ(memory.error(), make_error(errc::io_error));
  EXPECT_NE(describe(memory.error()).find("cannot map 4611686018427387904 bytes"),
            std::string::npos)
      << describe(memory.error());
}

}  // namespace
}  // namespace lifeboat::checkpoint
