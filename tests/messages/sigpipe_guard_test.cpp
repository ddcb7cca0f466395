// sigpipe_guard: a write to a pipe nobody reads fails with EPIPE instead of
// ending the process, with SIGPIPE at its default action as a trainer may
// have it, and the thread's signal mask is as it was afterwards.
#include "messages/sigpipe_guard.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include <gtest/gtest.h>

#include "messages/log.hpp"

namespace lifeboat {
namespace {

// A pipe whose read end is closed, with SIGPIPE at its default action while
// it lives (the test's process would end if the guard let one through).
class broken_pipe {
 public:
  broken_pipe() {
    int fds[2] = {-1, -1};
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    ::close(fds[0]);
    write_end_ = fds[1];
    previous_ = std::signal(SIGPIPE, SIG_DFL);
  }
  ~broken_pipe() {
    std::signal(SIGPIPE, previous_);
    ::close(write_end_);
  }
  int fd() const { return write_end_; }

 private:
  int write_end_ = -1;
  void (*previous_)(int) = nullptr;
};

bool sigpipe_blocked() {
  sigset_t mask;
  ::pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  return sigismember(&mask, SIGPIPE) == 1;
}

bool sigpipe_pending() {
  sigset_t pending;
  ::sigpending(&pending);
  return sigismember(&pending, SIGPIPE) == 1;
}

TEST(sigpipe_guard, a_write_to_a_pipe_nobody_reads_fails_with_epipe_and_the_process_lives_on) {
  broken_pipe pipe;
  ASSERT_FALSE(sigpipe_blocked());
  {
    sigpipe_guard guard;
    EXPECT_TRUE(sigpipe_blocked());
    errno = 0;
    EXPECT_EQ(::write(pipe.fd(), "x", 1), -1);
    EXPECT_EQ(errno, EPIPE);
    EXPECT_TRUE(sigpipe_pending());
  }
  // The raised SIGPIPE was taken back: unblocking it delivered nothing.
  EXPECT_FALSE(sigpipe_blocked());
  EXPECT_FALSE(sigpipe_pending());
}

// A thread that blocks SIGPIPE itself keeps it blocked, and keeps a SIGPIPE
// that was pending before the guard: it is that thread's own to take.
TEST(sigpipe_guard, a_mask_and_a_pending_sigpipe_from_before_are_left_as_they_were) {
  broken_pipe pipe;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &set, nullptr), 0);
  ASSERT_EQ(::write(pipe.fd(), "x", 1), -1);
  ASSERT_TRUE(sigpipe_pending());
  {
    sigpipe_guard guard;
    EXPECT_EQ(::write(pipe.fd(), "x", 1), -1);
  }
  EXPECT_TRUE(sigpipe_blocked());
  EXPECT_TRUE(sigpipe_pending());
  timespec zero{};
  EXPECT_EQ(::sigtimedwait(&set, nullptr, &zero), SIGPIPE);
  ASSERT_EQ(::pthread_sigmask(SIG_UNBLOCK, &set, nullptr), 0);
}

// lifeboat's own lines go out through the guard: a log line to a stderr whose
// reader went away (`| tee log`, tee gone) is dropped, the process lives on.
TEST(sigpipe_guard, a_log_line_to_a_stderr_nobody_reads_is_dropped) {
  broken_pipe pipe;
  auto saved = ::dup(STDERR_FILENO);
  ASSERT_GE(saved, 0);
  ASSERT_EQ(::dup2(pipe.fd(), STDERR_FILENO), STDERR_FILENO);
  write_stderr_line("lifeboat-launch: nobody reads this");
  log(log_level::error, "sigpipe_guard_test", "nor this");
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  EXPECT_FALSE(sigpipe_pending());
  EXPECT_FALSE(sigpipe_blocked());
}

}  // namespace
}  // namespace lifeboat
