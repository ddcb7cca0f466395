#include "platform/child_processes.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>

#include <gtest/gtest.h>

namespace lifeboat {
namespace {

using namespace std::chrono_literals;

// Forks a child that waits for signals until one ends it; with
// `ignore_sigterm` SIGTERM does not (ignored from its first instruction on:
// the disposition is inherited). An alarm ends a child nothing ends.
pid_t fork_child(bool ignore_sigterm) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction before {};
  if (ignore_sigterm) ::sigaction(SIGTERM, &ignore, &before);
  pid_t child = ::fork();
  if (child == 0) {
    ::alarm(60);
    for (;;) ::pause();
  }
  if (ignore_sigterm) ::sigaction(SIGTERM, &before, nullptr);
  return child;
}

bool gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

TEST(child_processes, lists_this_processs_children) {
  auto first = fork_child(false);
  auto second = fork_child(false);
  auto children = child_processes();
  EXPECT_NE(std::find(children.begin(), children.end(), first), children.end());
  EXPECT_NE(std::find(children.begin(), children.end(), second), children.end());
  EXPECT_EQ(std::find(children.begin(), children.end(), ::getpid()), children.end());
  EXPECT_EQ(end_child_processes(), 2u);
}

TEST(child_processes, ends_children_with_sigterm_and_reaps_them) {
  auto child = fork_child(false);
  EXPECT_EQ(end_child_processes(), 1u);
  EXPECT_TRUE(gone(child));
  EXPECT_TRUE(child_processes().empty());
}

TEST(child_processes, kills_a_child_that_ignores_sigterm_after_the_grace) {
  auto stubborn = fork_child(true);
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(end_child_processes(200ms), 1u);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms);
  EXPECT_TRUE(gone(stubborn));
}

// As lifeboat-launch is: ending a child makes its own child ours, and that
// one is ended as well.
TEST(child_processes, in_a_child_subreaper_ends_the_children_of_the_children_it_ended) {
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t child = ::fork();
  if (child == 0) {
    pid_t grandchild = fork_child(false);
    if (::write(fds[1], &grandchild, sizeof(grandchild)) != sizeof(grandchild)) ::_exit(1);
    ::alarm(60);
    for (;;) ::pause();
  }
  pid_t grandchild = 0;
  ASSERT_EQ(::read(fds[0], &grandchild, sizeof(grandchild)),
            static_cast<ssize_t>(sizeof(grandchild)));
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_EQ(end_child_processes(), 2u);
  EXPECT_TRUE(gone(child));
  EXPECT_TRUE(gone(grandchild));
  ::kill(grandchild, SIGKILL);  // where it failed: not left to its alarm
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST(child_processes, reaps_a_child_that_already_ended) {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  EXPECT_EQ(end_child_processes(), 1u);
  EXPECT_TRUE(gone(child));
  EXPECT_EQ(end_child_processes(), 0u);
}

}  // namespace
}  // namespace lifeboat
