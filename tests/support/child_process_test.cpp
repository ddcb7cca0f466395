#include "tests/support/child_process.hpp"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <string>

#include <gtest/gtest.h>

namespace {

using namespace std::chrono_literals;
using lifeboat::test::child_process;

constexpr auto line_timeout = 10s;
constexpr auto exit_timeout = 10s;
constexpr const char* long_sleep = "600";

// Whether the process `pid` (not a child of this one) ends within `timeout`:
// a pidfd becomes readable when its process exits.
bool ends_within(pid_t pid, std::chrono::milliseconds timeout) {
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return errno == ESRCH;  // already gone
  pollfd pfd{pidfd, POLLIN, 0};
  bool ended = ::poll(&pfd, 1, static_cast<int>(timeout.count())) == 1;
  ::close(pidfd);
  return ended;
}

// The probe starts `sleep 600` through child_process and prints its pid;
// killing the probe must end the sleep.
TEST(child_process_test, a_child_dies_with_the_process_that_started_it) {
  child_process probe{{LIFEBOAT_CHILD_PROCESS_PROBE, "/bin/sleep", long_sleep}};
  auto line = probe.read_line(line_timeout);
  ASSERT_TRUE(line) << "the probe did not report its child";
  auto grandchild = static_cast<pid_t>(std::stoi(*line));
  probe.kill(SIGKILL);
  ASSERT_TRUE(probe.wait_exit(exit_timeout));
  bool ended = ends_within(grandchild, exit_timeout);
  if (!ended) ::kill(grandchild, SIGKILL);
  EXPECT_TRUE(ended) << "the probe's child outlived it: nothing would end a worker whose test "
                        "crashed";
}

}  // namespace
