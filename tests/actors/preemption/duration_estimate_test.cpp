#include "actors/preemption/duration_estimate.hpp"

#include <gtest/gtest.h>

namespace lifeboat {
namespace {

TEST(duration_estimate, is_zero_without_samples_and_the_median_with_them) {
  duration_estimate d;
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(d.seconds(), 0);
  d.add(0.03);
  EXPECT_DOUBLE_EQ(d.seconds(), 0.03);
  d.add(0.01);
  EXPECT_DOUBLE_EQ(d.seconds(), 0.02) << "the mean of the middle two";
  d.add(0.02);
  EXPECT_DOUBLE_EQ(d.seconds(), 0.02);
  d.add(-1);
  EXPECT_DOUBLE_EQ(d.seconds(), 0.02) << "a negative duration is no sample";
}

TEST(duration_estimate, an_outlier_counts_only_up_to_the_bound) {
  duration_estimate d;
  d.add(0.1);
  d.add(10.0);
  EXPECT_DOUBLE_EQ(d.seconds(), (0.1 + duration_estimate::outlier_bound * 0.1) / 2);
}

TEST(duration_estimate, short_samples_are_never_bounded) {
  duration_estimate d;
  d.add(0);
  d.add(0.04);
  EXPECT_DOUBLE_EQ(d.seconds(), 0.02) << "an estimate of 0 must not pin later samples";
}

TEST(duration_estimate, a_lasting_change_takes_over_and_old_samples_leave) {
  duration_estimate d{3};
  for (int i = 0; i < 3; ++i) d.add(0.1);
  // Bounded at first (0.4 twice), then taken as they are.
  for (int i = 0; i < 5; ++i) d.add(1.0);
  EXPECT_DOUBLE_EQ(d.seconds(), 1.0);
  for (int i = 0; i < 3; ++i) d.add(0.2);
  EXPECT_DOUBLE_EQ(d.seconds(), 0.2);
}

}  // namespace
}  // namespace lifeboat
