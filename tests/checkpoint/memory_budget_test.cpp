// What a RAM-backed memory tier may take: /proc/meminfo and the cgroup's
// limit parsed from their text, the reserve left to the host, and this
// host's figures read for real.
#include "checkpoint/memory_budget.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace lifeboat::checkpoint {
namespace {

constexpr uint64_t gib = uint64_t{1} << 30;

TEST(memory_budget_test, meminfo_gives_the_available_and_total_bytes) {
  auto state = parse_meminfo(
      "MemTotal:       24683656 kB\nMemFree:        1000 kB\nMemAvailable:   24173260 kB\n"
      "Buffers:           1 kB\n");
  ASSERT_TRUE(state);
  EXPECT_EQ(state->total, uint64_t{24683656} * 1024);
  EXPECT_EQ(state->available, uint64_t{24173260} * 1024);
  EXPECT_FALSE(parse_meminfo("MemTotal: 100 kB\n"));
  EXPECT_FALSE(parse_meminfo(""));
}

TEST(memory_budget_test, a_cgroup_limit_leaves_its_limit_less_its_usage) {
  auto v2 = parse_cgroup_memory("8589934592\n", "2147483648\n");
  ASSERT_TRUE(v2);
  EXPECT_EQ(v2->total, 8 * gib);
  EXPECT_EQ(v2->available, 6 * gib);
  auto over = parse_cgroup_memory("1073741824\n", "2147483648\n");
  ASSERT_TRUE(over);
  EXPECT_EQ(over->available, 0u);
  // No limit: v2's "max", v1's page-counter maximum; and what is no number.
  EXPECT_FALSE(parse_cgroup_memory("max\n", "2147483648\n"));
  EXPECT_FALSE(parse_cgroup_memory("9223372036854771712\n", "2147483648\n"));
  EXPECT_FALSE(parse_cgroup_memory("", ""));
  EXPECT_FALSE(parse_cgroup_memory("12x\n", "1\n"));
}

TEST(memory_budget_test, the_reserve_is_a_tenth_of_the_total_and_at_least_a_gib) {
  EXPECT_EQ(ram_room({100 * gib, 200 * gib}), 80 * gib);
  EXPECT_EQ(ram_room({3 * gib, 4 * gib}), 2 * gib);
  EXPECT_EQ(ram_room({gib / 2, 4 * gib}), 0u);
}

TEST(memory_budget_test, this_host_leaves_no_more_than_its_available_memory) {
  std::ifstream in{"/proc/meminfo"};
  std::stringstream text;
  text << in.rdbuf();
  auto host = parse_meminfo(text.str());
  if (!host) GTEST_SKIP() << "no MemAvailable in /proc/meminfo here";
  auto room = host_ram_room();
  ASSERT_TRUE(room);
  // Read a moment apart: allow for what other processes freed meanwhile.
  EXPECT_LE(*room, ram_room(*host) + 256 * (uint64_t{1} << 20));
  EXPECT_TRUE(ram_backed("/dev/shm"));
  EXPECT_FALSE(ram_backed("/proc/self"));
}

}  // namespace
}  // namespace lifeboat::checkpoint
