// The tier choice of a final save: each rank's vote from its measured
// directory bandwidth and the deadline, and the decision from every vote.
#include "checkpoint/tier_choice.hpp"

#include <gtest/gtest.h>

namespace lifeboat::checkpoint {
namespace {

constexpr int64_t now_ms = 1'000'000;
constexpr uint64_t mib = uint64_t{1} << 20;

TEST(tier_choice_test, memory_only_when_all_hold_memory_and_one_is_too_slow) {
  EXPECT_TRUE(memory_only({vote_directory_fits, vote_directory_slow}));
  EXPECT_FALSE(memory_only({vote_directory_fits, vote_directory_fits}));
  EXPECT_FALSE(memory_only({vote_no_memory, vote_directory_slow}));
  EXPECT_FALSE(memory_only({}));
}

TEST(tier_choice_test, the_meter_averages_toward_the_newest_write) {
  bandwidth_meter meter;
  EXPECT_FALSE(meter.bytes_per_second());
  EXPECT_FALSE(meter.seconds_for(mib));
  meter.record(100 * mib, 1.0);
  EXPECT_DOUBLE_EQ(*meter.seconds_for(100 * mib), 1.0);
  meter.record(100 * mib, 0.5);
  EXPECT_DOUBLE_EQ(*meter.bytes_per_second(), 150.0 * mib);
  meter.record(0, 1.0);
  EXPECT_DOUBLE_EQ(*meter.bytes_per_second(), 150.0 * mib);
}

TEST(tier_choice_test, a_vote_weighs_the_write_against_the_time_left) {
  bandwidth_meter meter;
  // Nothing measured yet: the directory is taken to fit.
  EXPECT_EQ(tier_vote(true, meter, mib, now_ms, now_ms), vote_directory_fits);
  meter.record(100 * mib, 1.0);
  // 2 s of writing; the reserve comes off the time left.
  auto two_seconds = 200 * mib;
  EXPECT_EQ(tier_vote(true, meter, two_seconds, now_ms + deadline_reserve_ms + 2500, now_ms),
            vote_directory_fits);
  EXPECT_EQ(tier_vote(true, meter, two_seconds, now_ms + deadline_reserve_ms + 1500, now_ms),
            vote_directory_slow);
  EXPECT_EQ(tier_vote(false, meter, two_seconds, now_ms + 1500, now_ms), vote_no_memory);
}

// What a rank says after its directory write reads back the same; a rank
// that said nothing readable counts as a failed write without the shard in
// memory, so that no save commits in memory on its word.
TEST(tier_choice, a_directory_report_reads_back_and_silence_is_a_failure) {
  for (auto& report : {directory_report{true, ""}, directory_report{false, ""},
                       directory_report{true, "io_error: write x: No space left on device"},
                       directory_report{false, "io_error: y"}}) {
    auto read = decode_directory_report(encode(report));
    EXPECT_EQ(read.in_memory, report.in_memory) << encode(report);
    EXPECT_EQ(read.error, report.error) << encode(report);
  }
  auto none = decode_directory_report("");
  EXPECT_FALSE(none.in_memory);
  EXPECT_EQ(none.error, "no report");
  auto garbled = decode_directory_report("fits");
  EXPECT_FALSE(garbled.in_memory);
  EXPECT_EQ(garbled.error, "unreadable report 'fits'");
}

}  // namespace
}  // namespace lifeboat::checkpoint
