// A whole job paused and continued (Ctrl-Z then `fg`, SIGSTOP then SIGCONT
// to every process, a host paused) for longer than the heartbeat timeout:
// the coordination service and the workers each see that they themselves
// did not run (stall_watch), count none of that time as another's silence,
// and the job trains to its end. Before, the service declared every worker
// lost the moment it ran again, and the job failed.

#include <signal.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/apps/app_test_support.hpp"
#include "tests/apps/coordinated_job.hpp"

namespace {

using namespace std::chrono_literals;
using namespace lifeboat::test;

constexpr int workers = 2;
constexpr int64_t steps = 300;
// The service's timeout, short so that the pause outlasts it well: the
// pause is the stimulus under test, as long as 4 timeouts.
constexpr int heartbeat_timeout_ms = 1000;
constexpr auto pause = 4s;
const std::string token = "paused-job-test-token";

TEST(paused_job_test, a_whole_job_paused_past_the_heartbeat_timeout_trains_on) {
  scratch_dir dir{"apps-paused"};
  coordinated_job job{
      workers, token, {"--heartbeat-timeout-ms", std::to_string(heartbeat_timeout_ms)}};
  auto& service = job.service();
  ASSERT_TRUE(job.started()) << service.text();
  ASSERT_TRUE(job.start_workers(dir / "ckpt", steps, 10, {{"LIFEBOAT_PLATFORM", "generic"}}))
      << service.text();
  job.coordinator().kill(SIGSTOP);
  for (auto& p : job.workers()) p->kill(SIGSTOP);
  std::this_thread::sleep_for(pause);
  job.coordinator().kill(SIGCONT);
  for (auto& p : job.workers()) p->kill(SIGCONT);
  for (int rank = 0; rank < workers; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    auto& log = job.log(rank);
    log.read_all();
    EXPECT_EQ(exit_code(*job.workers()[rank]), 0) << log.text();
    EXPECT_EQ(log.digests(steps).size(), 1u) << log.text();
  }
  job.coordinator().kill(SIGTERM);
  service.read_all();
  EXPECT_EQ(exit_code(job.coordinator()), 0) << service.text();
  EXPECT_TRUE(service.contains("this service did not run for about")) << service.text();
  EXPECT_FALSE(service.contains(" lost")) << service.text();
}

}  // namespace
