#include "actors/preemption/phase.hpp"

#include <gtest/gtest.h>

namespace lifeboat {
namespace {

// A heartbeat carries the phase as its name: every name reads back as its
// phase, and nothing else reads as one.
TEST(phase, every_name_reads_back_and_nothing_else_does) {
  for (auto p : all_phases) EXPECT_EQ(phase_from_string(to_string(p)), p) << to_string(p);
  for (const char* other : {"", "Training", "training ", "hibernating"})
    EXPECT_EQ(phase_from_string(other), std::nullopt) << other;
}

TEST(phase, a_published_phase_starts_at_training_and_holds_the_last_one_set) {
  published_phase board;
  EXPECT_EQ(board.get(), phase::training);
  board.set(phase::saving);
  board.set(phase::grace_countdown);
  EXPECT_EQ(board.get(), phase::grace_countdown);
}

}  // namespace
}  // namespace lifeboat
