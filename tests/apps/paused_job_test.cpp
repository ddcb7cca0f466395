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
#include "tests/support/build_tree.hpp"

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
  child_process coordinator{{lifeboat::test::built(LIFEBOAT_COORDINATOR), "--port", "0",
                             "--world-size", std::to_string(workers), "--token", token,
                             "--heartbeat-timeout-ms", std::to_string(heartbeat_timeout_ms)},
                            true};
  output_log service{coordinator};
  auto listening = service.read_until("lifeboat-coordinator: listening on");
  ASSERT_TRUE(listening) << service.text();
  auto port = listening_port(*listening);
  std::vector<std::unique_ptr<child_process>> procs;
  std::vector<std::unique_ptr<output_log>> logs;
  for (int rank = 0; rank < workers; ++rank) {
    auto env = external_service_worker(rank, workers, port, token);
    env["LIFEBOAT_PLATFORM"] = "generic";
    procs.push_back(std::make_unique<child_process>(
        demo_command(lifeboat::test::built(LIFEBOAT_DEMO), dir / "ckpt", steps, 10), true,
        environment_with(env)));
    logs.push_back(std::make_unique<output_log>(*procs.back()));
  }
  ASSERT_TRUE(service.read_until_count(" joined (generation 0)", workers)) << service.text();
  coordinator.kill(SIGSTOP);
  for (auto& p : procs) p->kill(SIGSTOP);
  std::this_thread::sleep_for(pause);
  coordinator.kill(SIGCONT);
  for (auto& p : procs) p->kill(SIGCONT);
  for (int rank = 0; rank < workers; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    auto& log = *logs[rank];
    log.read_all();
    EXPECT_EQ(exit_code(*procs[rank]), 0) << log.text();
    EXPECT_EQ(log.digests(steps).size(), 1u) << log.text();
  }
  coordinator.kill(SIGTERM);
  service.read_all();
  EXPECT_EQ(exit_code(coordinator), 0) << service.text();
  EXPECT_TRUE(service.contains("this service did not run for about")) << service.text();
  EXPECT_FALSE(service.contains(" lost")) << service.text();
}

}  // namespace
