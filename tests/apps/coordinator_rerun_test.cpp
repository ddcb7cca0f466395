// A job run again on a lifeboat-coordinator that stayed up, its workers
// started again by a scheduler that sets no LIFEBOAT_RESTART_COUNT: the
// second run joins generation 0 again, after every worker of the first left.
// The service starts a new session of the generation, and the second run
// trains to the end. Before, its first barrier failed naming the ranks that
// had left (`publishing the peer tier's addresses: peer_lost: barrier
// lifeboat/peer-tier/: rank 1 is left`) and every worker exited 3.

#include <signal.h>

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "tests/apps/app_test_support.hpp"
#include "tests/apps/coordinated_job.hpp"

namespace {

using namespace lifeboat::test;

constexpr int workers = 2;
constexpr int64_t steps = 50;
constexpr int step_ms = 5;
const std::string token = "coordinator-rerun-test-token";

TEST(coordinator_rerun_test, a_job_run_again_on_a_coordinator_that_stayed_up_finishes) {
  scratch_dir dir{"apps-coordinator-rerun"};
  coordinated_job job{workers, token};
  ASSERT_TRUE(job.started()) << job.service().text();
  std::map<int, std::string> digests[2];
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    ASSERT_TRUE(job.start_workers(dir / ("ckpt-" + std::to_string(run)), steps, step_ms))
        << job.service().text();
    for (int rank = 0; rank < workers; ++rank) {
      auto index = run * workers + rank;
      auto& log = job.log(index);
      log.read_all();
      EXPECT_EQ(exit_code(*job.workers()[static_cast<size_t>(index)]), 0) << log.text();
      for (auto& [r, digest] : log.digests(steps)) digests[run][r] = digest;
    }
  }
  EXPECT_EQ(digests[0].size(), static_cast<size_t>(workers));
  EXPECT_EQ(digests[1], digests[0]);
  job.coordinator().kill(SIGTERM);
  job.service().read_all();
  EXPECT_EQ(exit_code(job.coordinator()), 0) << job.service().text();
  EXPECT_TRUE(job.service().contains(
      " joins generation 0 again, no rank joined: a new session of it starts"))
      << job.service().text();
}

}  // namespace
