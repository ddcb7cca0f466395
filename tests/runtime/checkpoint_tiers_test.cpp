// The worker's memory tier as LIFEBOAT_LOCAL_DIR sets it (a directory, 'off',
// one that cannot be made) and the status report of a checkpoint's tiers.
#include "runtime/checkpoint_tiers.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include <unistd.h>

namespace lifeboat {
namespace {

namespace fs = std::filesystem;

TEST(checkpoint_tiers_test, local_dir_names_the_memory_tier) {
  auto dir = fs::temp_directory_path() / ("lifeboat-tiers-test-" + std::to_string(::getpid()));
  auto tier = open_worker_memory_tier(dir.string(), "unused", 1, 2);
  ASSERT_TRUE(tier);
  EXPECT_EQ(tier->path(), (dir / "rank-00001-of-00002").string());
  EXPECT_FALSE(tier->remove());
  EXPECT_FALSE(fs::exists(dir));
}

TEST(checkpoint_tiers_test, off_means_no_memory_tier) {
  EXPECT_FALSE(open_worker_memory_tier(std::string{checkpoint::memory_tier_off}, "unused", 0, 1));
}

TEST(checkpoint_tiers_test, a_tier_that_cannot_be_made_is_left_out_with_a_warning) {
  ::testing::internal::CaptureStderr();
  auto tier = open_worker_memory_tier(std::string{"/proc/lifeboat-no-such-dir"}, "unused", 0, 1);
  auto log = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(tier);
  EXPECT_NE(log.find("no memory tier, checkpoints go to the directory only"), std::string::npos)
      << log;
}

TEST(checkpoint_tiers_test, the_report_lists_every_tier_with_its_seconds) {
  checkpoint::checkpoint_info info;
  info.step = 7;
  info.path = "/ckpt/step-000000000007";
  info.bytes = 1024;
  info.tiers = {{checkpoint::tier_memory, 0.25}, {checkpoint::tier_directory, 1.5}};
  auto report = checkpoint_report(info, 2.0);
  EXPECT_EQ(report.step(), 7);
  EXPECT_EQ(report.path(), info.path);
  EXPECT_EQ(report.bytes(), 1024);
  EXPECT_DOUBLE_EQ(report.seconds(), 2.0);
  ASSERT_EQ(report.tiers_size(), 2);
  EXPECT_EQ(report.tiers(0).name(), "memory");
  EXPECT_DOUBLE_EQ(report.tiers(0).seconds(), 0.25);
  EXPECT_EQ(report.tiers(1).name(), "directory");
}

}  // namespace
}  // namespace lifeboat
