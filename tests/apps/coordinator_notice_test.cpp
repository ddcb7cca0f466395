// A SIGTERM that reaches lifeboat-coordinator alone (its host is going away,
// or an operator stops the job there) while its workers train: it gives them
// a notice, they agree on a step, save and exit with the restart code while
// it still serves, and the next generation resumes with the digests of a
// run never interrupted. Before, the workers lost their service mid-training
// and exited 3 with nothing saved.

#include <signal.h>

#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "tests/apps/app_test_support.hpp"
#include "tests/apps/coordinated_job.hpp"

namespace {

using namespace lifeboat::test;

constexpr int workers = 2;
// Every run has the same steps (the digests are those of that step); the
// notice comes as the workers joined, long before the end.
constexpr int64_t steps = 600;
constexpr int step_ms = 5;
const std::string token = "coordinator-notice-test-token";

// One generation of the job in `ckpt` that trains to its end: each rank's
// digest, or fewer when it failed (the test's failure). A later generation
// resumes from the checkpoint there, and each worker says so.
std::map<int, std::string> train_to_the_end(const std::string& ckpt, int generation) {
  coordinated_job job{workers, token};
  EXPECT_TRUE(job.started()) << job.service().text();
  EXPECT_TRUE(job.start_workers(ckpt, steps, step_ms,
                                {{"LIFEBOAT_RESTART_COUNT", std::to_string(generation)}}))
      << job.service().text();
  std::map<int, std::string> digests;
  for (int rank = 0; rank < workers; ++rank) {
    auto& log = job.log(rank);
    log.read_all();
    EXPECT_EQ(exit_code(*job.workers()[rank]), 0) << log.text();
    if (generation > 0) {
      EXPECT_TRUE(log.contains("lifeboat-demo: rank=" + std::to_string(rank) + " resumed at step "))
          << log.text();
    }
    for (auto& [r, digest] : log.digests(steps)) digests[r] = digest;
  }
  job.coordinator().kill(SIGTERM);
  job.service().read_all();
  EXPECT_EQ(exit_code(job.coordinator()), 0) << job.service().text();
  return digests;
}

TEST(coordinator_notice_test, a_sigterm_to_the_coordinator_alone_saves_and_resumes_bit_exact) {
  scratch_dir dir{"apps-coordinator-notice"};
  auto expected = train_to_the_end(dir / "reference", 0);
  ASSERT_EQ(expected.size(), static_cast<size_t>(workers));

  {
    coordinated_job job{workers, token};
    ASSERT_TRUE(job.started()) << job.service().text();
    ASSERT_TRUE(job.start_workers(dir / "ckpt", steps, step_ms)) << job.service().text();
    job.coordinator().kill(SIGTERM);
    std::set<long long> agreed;
    for (int rank = 0; rank < workers; ++rank) {
      SCOPED_TRACE("rank " + std::to_string(rank));
      auto& log = job.log(rank);
      log.read_all();
      EXPECT_EQ(exit_code(*job.workers()[rank]), restart_exit_code) << log.text();
      EXPECT_TRUE(log.contains("notice from the coordination service's host (signal:SIGTERM)"))
          << log.text();
      for (auto step : log.agreed_steps()) agreed.insert(step);
    }
    EXPECT_EQ(agreed.size(), 1u) << "the workers saved at different steps";
    job.service().read_all();
    EXPECT_EQ(exit_code(job.coordinator()), 0) << job.service().text();
    EXPECT_TRUE(job.service().contains("no worker has recorded a notice: gave the 2 worker(s)"))
        << job.service().text();
    EXPECT_FALSE(job.service().contains(" lost")) << job.service().text();
  }

  EXPECT_EQ(train_to_the_end(dir / "ckpt", 1), expected);
}

}  // namespace
