#include "platform/signal_pipe.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "messages/errors.hpp"

namespace lifeboat {
namespace {

// Long enough for any loaded machine; a byte that never comes fails the test
// here instead of hanging it.
constexpr int read_timeout_ms = 10000;

// The next byte on `fd`: a signal number, 0 at end of file, -1 on a timeout.
int next_byte(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, read_timeout_ms) != 1) return -1;
  unsigned char byte = 0;
  auto n = ::read(fd, &byte, 1);
  return n == 1 ? byte : n == 0 ? 0 : -1;
}

class reader_fd {
 public:
  explicit reader_fd(int fd) : fd_(fd) {}
  ~reader_fd() { ::close(fd_); }
  int get() const { return fd_; }

 private:
  int fd_;
};

TEST(signal_pipe, signals_arrive_as_their_numbers_in_order) {
  auto pipe = signal_pipe::install({SIGUSR1, SIGUSR2});
  ASSERT_TRUE(pipe) << describe(pipe.error());
  auto fd = (*pipe)->open_reader();
  ASSERT_TRUE(fd) << describe(fd.error());
  reader_fd reader{*fd};
  // raise() runs the handler on this thread before it returns.
  std::raise(SIGUSR2);
  std::raise(SIGUSR1);
  std::raise(SIGUSR2);
  EXPECT_EQ(next_byte(reader.get()), SIGUSR2);
  EXPECT_EQ(next_byte(reader.get()), SIGUSR1);
  EXPECT_EQ(next_byte(reader.get()), SIGUSR2);
}

TEST(signal_pipe, a_signal_before_the_reader_is_opened_waits) {
  auto pipe = signal_pipe::install({SIGUSR1});
  ASSERT_TRUE(pipe) << describe(pipe.error());
  std::raise(SIGUSR1);
  auto fd = (*pipe)->open_reader();
  ASSERT_TRUE(fd) << describe(fd.error());
  reader_fd reader{*fd};
  EXPECT_EQ(next_byte(reader.get()), SIGUSR1);
}

TEST(signal_pipe, the_reader_outlives_the_pipe_and_then_reads_end_of_file) {
  auto pipe = signal_pipe::install({SIGUSR1});
  ASSERT_TRUE(pipe) << describe(pipe.error());
  auto fd = (*pipe)->open_reader();
  ASSERT_TRUE(fd) << describe(fd.error());
  reader_fd reader{*fd};
  std::raise(SIGUSR1);
  pipe->reset();
  EXPECT_EQ(next_byte(reader.get()), SIGUSR1);
  EXPECT_EQ(next_byte(reader.get()), 0);
}

TEST(signal_pipe, only_one_is_installed_at_a_time) {
  auto first = signal_pipe::install({SIGUSR1});
  ASSERT_TRUE(first) << describe(first.error());
  auto second = signal_pipe::install({SIGUSR2});
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error(), make_error(errc::already_exists)) << describe(second.error());
  first->reset();
  auto third = signal_pipe::install({SIGUSR2});
  EXPECT_TRUE(third) << describe(third.error());
}

volatile std::sig_atomic_t previous_handler_calls = 0;

extern "C" void count_previous_handler_call(int) {
  previous_handler_calls = previous_handler_calls + 1;
}

// While it lives, count_previous_handler_call is SIGUSR1's handler (the one
// a pipe installed then replaces), counting from 0; then the one before it is.
class counting_handler {
 public:
  counting_handler() {
    struct sigaction mine {};
    mine.sa_handler = count_previous_handler_call;
    sigemptyset(&mine.sa_mask);
    installed_ = ::sigaction(SIGUSR1, &mine, &before_) == 0;
    previous_handler_calls = 0;
  }
  ~counting_handler() {
    if (installed_) ::sigaction(SIGUSR1, &before_, nullptr);
  }
  counting_handler(const counting_handler&) = delete;
  counting_handler& operator=(const counting_handler&) = delete;

  bool installed() const { return installed_; }

 private:
  struct sigaction before_ {};
  bool installed_ = false;
};

TEST(signal_pipe, destroying_it_restores_the_previous_handler) {
  counting_handler counting;
  ASSERT_TRUE(counting.installed());
  {
    auto pipe = signal_pipe::install({SIGUSR1});
    ASSERT_TRUE(pipe) << describe(pipe.error());
    std::raise(SIGUSR1);
    EXPECT_EQ(previous_handler_calls, 0);
  }
  std::raise(SIGUSR1);
  EXPECT_EQ(previous_handler_calls, 1);
}

// A handler installed after the pipe's (a trainer's signal.signal) takes
// its signal away from the pipe: replaced() names it, and only it.
TEST(signal_pipe, replaced_names_the_signals_another_handler_took) {
  EXPECT_EQ(signal_pipe::replaced({SIGUSR1}), std::vector<int>{SIGUSR1});
  auto pipe = signal_pipe::install({SIGUSR1, SIGUSR2});
  ASSERT_TRUE(pipe) << describe(pipe.error());
  EXPECT_EQ(signal_pipe::replaced({SIGUSR1, SIGUSR2}), std::vector<int>{});
  {
    counting_handler counting;
    ASSERT_TRUE(counting.installed());
    EXPECT_EQ(signal_pipe::replaced({SIGUSR1, SIGUSR2}), std::vector<int>{SIGUSR1});
  }
  EXPECT_EQ(signal_pipe::replaced({SIGUSR1, SIGUSR2}), std::vector<int>{});
}

// In a child of one thread that blocks SIGUSR1, a SIGUSR1 sent to it waits
// for a thread to take it, and none ever will: take_blocked_everywhere takes
// it (once), and only the signals it is asked for.
TEST(signal_pipe, take_blocked_everywhere_takes_a_signal_no_thread_would) {
  pid_t child = ::fork();
  if (child == 0) {
    sigset_t blocked = signal_set({SIGUSR1, SIGUSR2});
    ::sigprocmask(SIG_BLOCK, &blocked, nullptr);
    if (!signal_pipe::take_blocked_everywhere({SIGUSR1, SIGUSR2}).empty()) ::_exit(1);
    ::kill(::getpid(), SIGUSR1);
    if (signal_pipe::take_blocked_everywhere({SIGUSR2}) != std::vector<int>{}) ::_exit(2);
    if (signal_pipe::take_blocked_everywhere({SIGUSR1, SIGUSR2}) != std::vector<int>{SIGUSR1})
      ::_exit(3);
    sigset_t pending;
    ::sigpending(&pending);
    if (::sigismember(&pending, SIGUSR1) == 1) ::_exit(4);
    if (!signal_pipe::take_blocked_everywhere({SIGUSR1}).empty()) ::_exit(5);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

int wait_status(pid_t child) {
  int status = 0;
  ::waitpid(child, &status, 0);
  return status;
}

// Forks a child that raises `signo` and then exits with the count of calls
// of count_previous_handler_call it saw; the child's wait status.
int status_of_child_raising(int signo) {
  pid_t child = ::fork();
  if (child == 0) {
    std::raise(signo);
    ::_exit(previous_handler_calls);
  }
  return wait_status(child);
}

// No byte waits on `fd` (the byte of a signal is written before the handler
// returns, so once its sender is gone, a byte it sent is there).
bool nothing_to_read(int fd) {
  unsigned char byte = 0;
  return ::recv(fd, &byte, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN;
}

// The exit code of a child of fork_waiting_child whose handler returned.
constexpr int handled_exit_code = 7;

// Forks a child that waits for `signo` and exits with handled_exit_code once
// its handler returned. The signal stays blocked until the child waits, so
// none is lost; an alarm ends a child that nothing signals.
pid_t fork_waiting_child(int signo) {
  sigset_t block = signal_set({signo});
  sigset_t previous;
  ::pthread_sigmask(SIG_BLOCK, &block, &previous);
  pid_t child = ::fork();
  if (child == 0) {
    ::alarm(30);
    sigset_t waiting = previous;
    sigdelset(&waiting, signo);
    ::sigsuspend(&waiting);
    ::_exit(handled_exit_code);
  }
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return child;
}

// SIGUSR2's pipe and a reader of it, for the tests of forked children.
class forked_child_test : public testing::Test {
 protected:
  void SetUp() override {
    auto installed = signal_pipe::install({SIGUSR2});
    ASSERT_TRUE(installed) << describe(installed.error());
    pipe_ = std::move(*installed);
    auto fd = pipe_->open_reader();
    ASSERT_TRUE(fd) << describe(fd.error());
    reader_.emplace(*fd);
  }

  int reader() const { return reader_->get(); }

 private:
  std::unique_ptr<signal_pipe> pipe_;
  std::optional<reader_fd> reader_;
};

// A forked child (a multiprocessing.Pool worker) inherits the handler: a
// signal it sends itself, or gets from its parent (a pool's terminate()),
// takes the child's own course and never reaches the installing process.
TEST_F(forked_child_test, a_forked_child_ends_on_a_signal_from_its_parent) {
  auto child = fork_waiting_child(SIGUSR2);
  ASSERT_EQ(::kill(child, SIGUSR2), 0);
  auto status = wait_status(child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGUSR2) << "wait status " << status;
  EXPECT_TRUE(nothing_to_read(reader()));
}

// A signal from any other process (a scheduler's to every process of the job)
// leaves the child serving its worker, which gets a signal of its own.
TEST_F(forked_child_test, a_forked_child_outlives_a_signal_from_another_process) {
  auto child = fork_waiting_child(SIGUSR2);
  pid_t sender = ::fork();
  if (sender == 0) ::_exit(::kill(child, SIGUSR2) == 0 ? 0 : 1);
  auto sent = wait_status(sender);
  ASSERT_TRUE(WIFEXITED(sent) && WEXITSTATUS(sent) == 0) << "wait status " << sent;
  auto status = wait_status(child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == handled_exit_code)
      << "wait status " << status;
  EXPECT_TRUE(nothing_to_read(reader()));
}

TEST_F(forked_child_test, a_forked_child_ends_on_a_signal_it_raises) {
  auto status = status_of_child_raising(SIGUSR2);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGUSR2) << "wait status " << status;
  EXPECT_TRUE(nothing_to_read(reader()));
  std::raise(SIGUSR2);
  EXPECT_EQ(next_byte(reader()), SIGUSR2);
}

TEST(signal_pipe, a_forked_child_runs_the_handler_it_had_before) {
  counting_handler counting;
  ASSERT_TRUE(counting.installed());
  {
    auto pipe = signal_pipe::install({SIGUSR1});
    ASSERT_TRUE(pipe) << describe(pipe.error());
    auto reader = (*pipe)->open_reader();
    ASSERT_TRUE(reader) << describe(reader.error());
    reader_fd guard{*reader};
    auto status = status_of_child_raising(SIGUSR1);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << "wait status " << status;
    EXPECT_TRUE(nothing_to_read(guard.get()));
    EXPECT_EQ(previous_handler_calls, 0);
  }
}

TEST(signal_pipe, refuses_a_number_that_is_no_signal) {
  auto pipe = signal_pipe::install({SIGUSR1, NSIG});
  ASSERT_FALSE(pipe);
  EXPECT_EQ(pipe.error(), make_error(errc::invalid_config));
}

TEST(signal_set, holds_exactly_the_signals_named) {
  auto set = signal_set({SIGTERM, SIGUSR1});
  for (int signo = 1; signo < NSIG; ++signo)
    EXPECT_EQ(sigismember(&set, signo), signo == SIGTERM || signo == SIGUSR1 ? 1 : 0) << signo;
  auto none = signal_set({});
  EXPECT_EQ(sigismember(&none, SIGTERM), 0);
}

}  // namespace
}  // namespace lifeboat
