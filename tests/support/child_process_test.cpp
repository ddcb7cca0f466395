#include "tests/support/child_process.hpp"
#include "tests/support/build_tree.hpp"

#include <chrono>
#include <csignal>
#include <string>

#include <gtest/gtest.h>

namespace {

using namespace std::chrono_literals;
using lifeboat::test::child_process;
using lifeboat::test::gone_within;

constexpr auto line_timeout = 10s;
constexpr auto exit_timeout = 10s;
constexpr const char* long_sleep = "600";

// The probe starts `sleep 600` through child_process and prints its pid;
// killing the probe must end the sleep.
TEST(child_process_test, a_child_dies_with_the_process_that_started_it) {
  child_process probe{
      {lifeboat::test::built(LIFEBOAT_CHILD_PROCESS_PROBE), "/bin/sleep", long_sleep}};
  auto line = probe.read_line(line_timeout);
  ASSERT_TRUE(line) << "the probe did not report its child";
  auto grandchild = static_cast<pid_t>(std::stoi(*line));
  probe.kill(SIGKILL);
  ASSERT_TRUE(probe.wait_exit(exit_timeout));
  bool ended = gone_within(grandchild, exit_timeout);
  if (!ended) ::kill(grandchild, SIGKILL);
  EXPECT_TRUE(ended) << "the probe's child outlived it: nothing would end a worker whose test "
                        "crashed";
}

}  // namespace
