// Signals while the handler is being constructed: the workers wait to join a
// coordination service that nobody hosts (the launcher that would is gone),
// and a signal must end them at once, not after the 120 s join bound. No
// training step has run, so a notice exits with the restart code (the latest
// complete checkpoint is the state) and SIGINT with the failure code.

#include <signal.h>

#include <gtest/gtest.h>

#include "tests/runtime/worker_cluster.hpp"

namespace lifeboat::test {
namespace {

// Far below the join bound (120 s): only the guard ends a worker this soon.
constexpr auto signal_exit_bound = 5s;

TEST(startup_guard_test, signals_while_joining_end_the_worker_with_the_matching_code) {
  temp_dir dir{"startup-guard"};
  auto opts = make_options(2, dir.str(), {"--steps", "10"});
  opts.extra_env.push_back("LIFEBOAT_COORDINATOR_EXTERNAL=1");
  worker_cluster c{opts};
  // Logged once the signal handlers and the guard are in place, before the join.
  for (int rank = 0; rank < 2; ++rank)
    ASSERT_TRUE(c.wait_for([rank](int r, const std::string& line) {
      return r == rank && line.find(" of 2 (lifeboat, platform") != std::string::npos;
    })) << c.transcript();
  c.worker(0).kill(SIGTERM);
  c.worker(1).kill(SIGINT);
  auto codes = c.finish(signal_exit_bound);
  EXPECT_EQ(codes, (std::vector<int>{restart_exit_code, failure_exit_code})) << c.transcript();
  EXPECT_EQ(
      c.lines_containing(0, "SIGTERM while joining the cluster, before any training step").size(),
      1u)
      << c.transcript();
  EXPECT_EQ(c.lines_containing(1, "SIGINT while joining the cluster").size(), 1u) << c.transcript();
  EXPECT_TRUE(c.values(0, "restored").empty()) << c.transcript();
}

}  // namespace
}  // namespace lifeboat::test
