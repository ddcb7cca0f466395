#include "platform/child_processes.hpp"

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

TEST(child_processes, reaps_a_child_that_already_ended) {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  EXPECT_EQ(end_child_processes(), 1u);
  EXPECT_TRUE(gone(child));
  EXPECT_EQ(end_child_processes(), 0u);
}

}  // namespace
}  // namespace lifeboat
