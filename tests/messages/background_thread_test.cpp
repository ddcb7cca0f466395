// background_thread: lifeboat's own threads take no process-directed signal,
// so a SIGTERM that comes while the application holds it off its threads
// stays pending instead of landing on one of lifeboat's.
#include "messages/background_thread.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>

#include <gtest/gtest.h>

namespace lifeboat {
namespace {

bool blocked_here(int signo) {
  sigset_t now;
  pthread_sigmask(SIG_BLOCK, nullptr, &now);
  return sigismember(&now, signo) == 1;
}

TEST(background_thread, blocks_the_process_signals_but_not_those_of_a_fault) {
  std::promise<std::pair<bool, bool>> seen;
  auto thread = background_thread([&] {
    seen.set_value({blocked_here(SIGTERM), blocked_here(SIGSEGV)});
  });
  auto [term, segv] = seen.get_future().get();
  thread.join();
  EXPECT_TRUE(term) << "SIGTERM could land on lifeboat's thread";
  EXPECT_FALSE(segv) << "a fault in lifeboat's thread must still reach its handler";
  EXPECT_FALSE(blocked_here(SIGTERM)) << "the caller's mask was not restored";
}

std::atomic<int> taken{0};
extern "C" void count_signal(int) { ++taken; }

// The application holds the signal off its only thread (lifeboat-demo once
// training is done); with a thread of lifeboat's running, the signal stays
// pending: no thread takes it.
TEST(background_thread, a_signal_the_application_holds_off_stays_pending) {
  struct sigaction action {};
  action.sa_handler = count_signal;
  sigemptyset(&action.sa_mask);
  struct sigaction before {};
  ASSERT_EQ(sigaction(SIGUSR2, &action, &before), 0);
  // Started while the application takes the signal, as lifeboat's threads
  // are: a thread started after the block would inherit it.
  std::promise<void> release;
  auto released = release.get_future();
  std::promise<void> running;
  auto thread = background_thread([&] {
    running.set_value();
    released.wait();
  });
  running.get_future().wait();
  sigset_t usr2;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &usr2, nullptr), 0);
  ASSERT_EQ(kill(getpid(), SIGUSR2), 0);
  // The thread runs again after the signal was sent (it returns from its
  // wait and ends): a thread that does not block the signal takes it then.
  release.set_value();
  thread.join();
  sigset_t pending;
  ASSERT_EQ(sigpending(&pending), 0);
  EXPECT_EQ(sigismember(&pending, SIGUSR2), 1);
  EXPECT_EQ(taken.load(), 0) << "lifeboat's thread took the signal";
  timespec none{};
  EXPECT_EQ(sigtimedwait(&usr2, nullptr, &none), SIGUSR2);
  ASSERT_EQ(pthread_sigmask(SIG_UNBLOCK, &usr2, nullptr), 0);
  ASSERT_EQ(sigaction(SIGUSR2, &before, nullptr), 0);
}

}  // namespace
}  // namespace lifeboat
