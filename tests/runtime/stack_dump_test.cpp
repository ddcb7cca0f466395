// stack_dumper: the training thread writes its own stack on demand, a thread
// that cannot take the signal costs dump() its bound and writes nothing, and
// the signal's previous action comes back with the dumper's end.
#include "runtime/stack_dump.hpp"

#include <signal.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "lifeboat/handler.hpp"

namespace lifeboat {
namespace {

using namespace std::chrono_literals;

constexpr const char* header = "lifeboat: native stack of the training thread:";

// Runs `body` on a thread that installed a dumper for itself and then runs
// until `body` returns; the dumper is gone when it returns. `block`: the
// thread blocks the dump signal first. It runs, as a trainer does, rather
// than sleep in a wait: ThreadSanitizer delivers a signal to a thread only
// at its next call into the runtime (an atomic load here).
template <class Body>
void with_training_thread(bool block, Body body) {
  std::promise<stack_dumper*> installed;
  std::atomic<bool> done{false};
  std::thread training{[&] {
    if (block) {
      sigset_t dump_only;
      sigemptyset(&dump_only);
      sigaddset(&dump_only, stack_dump_signal());
      ::pthread_sigmask(SIG_BLOCK, &dump_only, nullptr);
    }
    auto dumper = stack_dumper::install_for_this_thread();
    installed.set_value(dumper ? dumper->get() : nullptr);
    // A signal left pending on this thread goes with it: it never unblocks.
    while (!done.load()) std::this_thread::yield();
  }};
  auto* dumper = installed.get_future().get();
  EXPECT_NE(dumper, nullptr);
  if (dumper != nullptr) body(*dumper);
  done = true;
  training.join();
}

TEST(stack_dump, the_training_thread_writes_its_own_stack_on_demand) {
  std::string written;
  with_training_thread(false, [&](stack_dumper& dumper) {
    ::testing::internal::CaptureStderr();
    dumper.dump(10s);
    written = ::testing::internal::GetCapturedStderr();
  });
  auto at = written.find(header);
  ASSERT_NE(at, std::string::npos) << written;
  // At least one frame after the header.
  EXPECT_GT(written.size(), at + std::string{header}.size() + 2) << written;
}

TEST(stack_dump, a_thread_that_cannot_take_the_signal_costs_the_bound_and_writes_nothing) {
  std::string written;
  std::chrono::steady_clock::duration took{};
  with_training_thread(true, [&](stack_dumper& dumper) {
    ::testing::internal::CaptureStderr();
    auto start = std::chrono::steady_clock::now();
    dumper.dump(200ms);
    took = std::chrono::steady_clock::now() - start;
    written = ::testing::internal::GetCapturedStderr();
  });
  EXPECT_EQ(written.find(header), std::string::npos) << written;
  EXPECT_GE(took, 200ms);
}

TEST(stack_dump, the_previous_action_comes_back_when_the_dumper_ends) {
  struct sigaction own {};
  own.sa_handler = [](int) {};
  sigemptyset(&own.sa_mask);
  struct sigaction before {};
  ASSERT_EQ(::sigaction(stack_dump_signal(), &own, &before), 0);
  with_training_thread(false, [&own](stack_dumper&) {
    struct sigaction now {};
    ::sigaction(stack_dump_signal(), nullptr, &now);
    EXPECT_NE(now.sa_handler, own.sa_handler);
  });
  struct sigaction after {};
  ::sigaction(stack_dump_signal(), &before, &after);
  EXPECT_EQ(after.sa_handler, own.sa_handler);
}

}  // namespace
}  // namespace lifeboat
