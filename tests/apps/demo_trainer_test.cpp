// demo_trainer: the demo's state is a pure function of (rank, step, state),
// which is what lets every end-to-end test compare a preempted run's digest
// with an uninterrupted one's: a copy taken at any step and stepped on ends
// where the uninterrupted state does, and a skipped or repeated step, another
// rank or one flipped bit end elsewhere.
#include "apps/demo_trainer.hpp"

#include <cstring>

#include <gtest/gtest.h>

namespace lifeboat::demo {
namespace {

constexpr size_t state_bytes = 64 * 1024;
constexpr int64_t steps = 20;

// The digest of rank `rank`'s state after steps 1..`last`.
std::string digest_after(int rank, int64_t last) {
  trainer_state state{state_bytes};
  state.start(rank, true);
  for (int64_t step = 1; step <= last; ++step) state.apply_step(step);
  return state.digest();
}

TEST(demo_trainer, a_state_restored_at_any_step_ends_as_the_uninterrupted_one) {
  auto uninterrupted = digest_after(1, steps);
  for (int64_t saved_at : {int64_t{0}, int64_t{1}, steps / 2, steps - 1, steps}) {
    trainer_state before{state_bytes};
    before.start(1, true);
    for (int64_t step = 1; step <= saved_at; ++step) before.apply_step(step);
    // The restart: a new state, the saved bytes put back, not set fresh.
    trainer_state after{state_bytes};
    std::memcpy(after.data(), before.data(), before.bytes());
    after.start(1, false);
    for (int64_t step = saved_at + 1; step <= steps; ++step) after.apply_step(step);
    EXPECT_EQ(after.digest(), uninterrupted) << "saved at step " << saved_at;
  }
}

TEST(demo_trainer, a_skipped_or_repeated_step_or_another_rank_ends_elsewhere) {
  auto uninterrupted = digest_after(1, steps);
  trainer_state skipped{state_bytes};
  skipped.start(1, true);
  for (int64_t step = 1; step <= steps; ++step)
    if (step != 7) skipped.apply_step(step);
  EXPECT_NE(skipped.digest(), uninterrupted);
  trainer_state repeated{state_bytes};
  repeated.start(1, true);
  for (int64_t step = 1; step <= steps; ++step) {
    repeated.apply_step(step);
    if (step == 7) repeated.apply_step(step);
  }
  EXPECT_NE(repeated.digest(), uninterrupted);
  EXPECT_NE(digest_after(2, steps), uninterrupted);
  EXPECT_EQ(digest_after(1, steps), uninterrupted);
}

TEST(demo_trainer, one_flipped_bit_of_a_restored_state_changes_the_digest) {
  trainer_state state{state_bytes};
  state.start(0, true);
  state.apply_step(1);
  auto before = state.digest();
  static_cast<unsigned char*>(state.data())[state_bytes / 2] ^= 1;
  EXPECT_NE(state.digest(), before);
  EXPECT_EQ(state.digest().size(), 16u);
}

}  // namespace
}  // namespace lifeboat::demo
