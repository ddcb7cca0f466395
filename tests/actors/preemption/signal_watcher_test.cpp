// The signal watcher with a real signal pipe and real signals (raise runs
// the handler on this thread before it returns): one notice with its
// deadline for the first signal, none for the ones after it.
#include "actors/preemption/signal_watcher.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <string>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include <gtest/gtest.h>

#include "actors/atoms.hpp"
#include "actors/preemption/protocol.hpp"
#include "actors/system_config.hpp"
#include "messages/errors.hpp"
#include "messages/preemption.pb.h"
#include "messages/status.pb.h"
#include "messages/wire.hpp"
#include "platform/clock.hpp"
#include "platform/signal_pipe.hpp"
#include "tests/support/actor_probe.hpp"

namespace lifeboat {
namespace {

constexpr int64_t grace_period_ms = 5000;
using test::wait_bound;

class signal_watcher_test : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pipe = signal_pipe::install({SIGUSR1, SIGUSR2});
    ASSERT_TRUE(pipe) << describe(pipe.error());
    pipe_ = std::move(*pipe);
    auto fd = pipe_->open_reader();
    ASSERT_TRUE(fd) << describe(fd.error());
    // The watcher owns the reader from here on.
    watcher_ = spawn_signal_watcher(sys_, *fd, grace_period_ms, caf::actor{resolver_});
  }

  void TearDown() override {
    if (watcher_) driver_->send_exit(watcher_, caf::exit_reason::user_shutdown);
  }

  wire::ActorStatus status() { return test::status_of(driver_, watcher_); }

  // Asks until the watcher has read `n` signals. The bytes arrive on the
  // watcher's socket, not in its mailbox, so one round trip is not enough;
  // each ask is a round trip, not a sleep, and the wait is bounded.
  bool await_signals(double n) {
    auto deadline = std::chrono::steady_clock::now() + wait_bound;
    while (std::chrono::steady_clock::now() < deadline)
      if (status().metrics().at("signals_received_total") >= n) return true;
    return false;
  }

  system_config cfg_;
  caf::actor_system sys_{cfg_};
  caf::scoped_actor resolver_{sys_};
  caf::scoped_actor driver_{sys_};
  std::unique_ptr<signal_pipe> pipe_;
  caf::actor watcher_;
};

TEST_F(signal_watcher_test, the_first_signal_is_one_notice_with_the_grace_period_as_deadline) {
  EXPECT_EQ(status().state(), "watching");
  auto before = unix_now_ms();
  std::raise(SIGUSR2);
  wire::Notice notice;
  bool got = false;
  resolver_->receive(
      [&](notice_atom, const wire::Notice& n) {
        notice = n;
        got = true;
      },
      caf::after(wait_bound) >> [] {});
  ASSERT_TRUE(got);
  EXPECT_EQ(notice.source(), "signal:SIGUSR2");
  EXPECT_EQ(notice.reason(), "SIGUSR2 received");
  EXPECT_GE(notice.received_unix_ms(), before);
  EXPECT_LE(notice.received_unix_ms(), unix_now_ms());
  EXPECT_EQ(notice.deadline_unix_ms(), notice.received_unix_ms() + grace_period_ms);
  EXPECT_EQ(status().state(), "notified");
}

TEST_F(signal_watcher_test, later_signals_are_counted_and_not_acted_on) {
  std::raise(SIGUSR1);
  std::raise(SIGUSR2);
  std::raise(SIGUSR1);
  ASSERT_TRUE(await_signals(3));
  // The watcher sends a notice while it handles its byte, so every notice
  // it will ever send for these three is in the resolver's mailbox now.
  EXPECT_EQ(test::take_held(resolver_, [](notice_atom, const wire::Notice&) {}), 1);
}

// A signal that every thread blocks (the trainer's pthread_sigmask, beside
// lifeboat's threads, which block all) is taken at the watcher's next check
// as a notice; after the training loop ended it is left pending (an
// application that holds its signals until it exits, as lifeboat-demo does).
// In a process of its own (a death test), every thread of which blocks
// SIGUSR1 from the start: a thread left by an earlier test would take it.
// The exit code says which expectation failed (0: none).
[[noreturn]] void blocked_everywhere_scenario() {
  auto usr1 = signal_set({SIGUSR1});
  pthread_sigmask(SIG_BLOCK, &usr1, nullptr);
  auto pipe = signal_pipe::install({SIGUSR1});
  auto fd = pipe ? (*pipe)->open_reader() : caf::expected<int>{caf::error{}};
  if (!fd) std::_Exit(10);
  system_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor resolver{sys};
  std::atomic<bool> over{true};
  std::atomic<int> checks{0};
  auto watcher = spawn_signal_watcher(
      sys, *fd, grace_period_ms, caf::actor{resolver}, {SIGUSR1},
      [&] {
        ++checks;
        return over.load();
      },
      std::chrono::milliseconds{10});
  kill(getpid(), SIGUSR1);
  // Two checks after the signal came: both found the training over.
  auto after = checks.load() + 2;
  auto deadline = std::chrono::steady_clock::now() + wait_bound;
  while (checks.load() < after && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  sigset_t pending;
  sigpending(&pending);
  if (sigismember(&pending, SIGUSR1) != 1) std::_Exit(11);
  over = false;
  std::string source;
  resolver->receive([&](notice_atom, const wire::Notice& n) { source = n.source(); },
                    caf::after(wait_bound) >> [] {});
  if (source != "signal:SIGUSR1") std::_Exit(12);
  sigpending(&pending);
  if (sigismember(&pending, SIGUSR1) != 0) std::_Exit(13);
  std::_Exit(0);
}

TEST(signal_watcher_blocked_test, a_signal_every_thread_blocks_is_a_notice_until_training_ends) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(blocked_everywhere_scenario(), ::testing::ExitedWithCode(0), "");
}

// A handler the trainer installs after lifeboat's takes its signal away:
// the watcher says so in its status (and once in a warning) at its next check.
TEST_F(signal_watcher_test, a_handler_that_replaced_the_pipes_is_reported) {
  driver_->send_exit(watcher_, caf::exit_reason::user_shutdown);
  auto fd = pipe_->open_reader();
  ASSERT_TRUE(fd) << describe(fd.error());
  watcher_ = spawn_signal_watcher(sys_, *fd, grace_period_ms, caf::actor{resolver_},
                                  {SIGUSR1, SIGUSR2}, {}, std::chrono::milliseconds{10});
  EXPECT_EQ(status().metrics().at("signal_handlers_replaced"), 0);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction before {};
  ASSERT_EQ(::sigaction(SIGUSR2, &ignore, &before), 0);
  auto deadline = std::chrono::steady_clock::now() + wait_bound;
  while (std::chrono::steady_clock::now() < deadline &&
         status().metrics().at("signal_handlers_replaced") < 1) {
  }
  ::sigaction(SIGUSR2, &before, nullptr);
  auto st = status();
  EXPECT_EQ(st.state(), "handler replaced: SIGUSR2");
  EXPECT_EQ(st.metrics().at("signal_handlers_replaced"), 1);
}

TEST(signal_watcher_without_pipe, is_inactive_and_still_answers) {
  system_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto watcher = spawn_signal_watcher(sys, -1, grace_period_ms, caf::actor{self});
  EXPECT_EQ(test::status_of(self, watcher).state(), "inactive");
  self->send_exit(watcher, caf::exit_reason::user_shutdown);
}

}  // namespace
}  // namespace lifeboat
