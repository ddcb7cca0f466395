#include "platform/thread_policy.hpp"

#include <sched.h>

#include <thread>

#include <gtest/gtest.h>

namespace lifeboat {
namespace {

// Only the calling thread changes policy: the thread that asked runs as
// SCHED_BATCH, the one that started it stays as it was.
TEST(thread_policy, batch_is_for_the_calling_thread_only) {
  int before = ::sched_getscheduler(0);
  int inside = -1;
  bool ok = false;
  std::thread t{[&] {
    ok = !run_this_thread_as_batch();
    inside = ::sched_getscheduler(0);
  }};
  t.join();
  EXPECT_TRUE(ok);
  EXPECT_EQ(inside, SCHED_BATCH);
  EXPECT_EQ(::sched_getscheduler(0), before);
}

}  // namespace
}  // namespace lifeboat
