// Issue 7 end to end: two lifeboat-demo workers on "GCE" (the loopback
// metadata mock, found through GCE_METADATA_HOST the way platform detection
// finds the real server) train until the mock announces host maintenance
// (instance/maintenance-event = TERMINATE_ON_HOST_MAINTENANCE); both save at
// one agreed step and exit with GCE's restart code.
//
// The workers run without lifeboat-launch (it would give them its own restart
// code, 42 by default, and restart them into the same notice), joined through
// lifeboat-coordinator, so each worker's exit code is seen directly.

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/apps/app_test_support.hpp"
#include "tests/apps/status_client.hpp"
#include "tests/platform/mock_server.hpp"
#include "tests/support/build_tree.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace lifeboat::test;

constexpr int workers = 2;
// GCE's restart code (TensorFlow's on GCE), chosen by platform detection.
constexpr int gce_restart_code = 143;
constexpr auto coordinator_stop_deadline = 10s;
// The notice comes midway: once both workers' status endpoints report
// training past this step (10 ms steps: a fraction of a second).
constexpr int64_t notice_after_step = 20;
constexpr auto training_deadline = 30s;
const std::string token = "gce-notice-test-token";

TEST(gce_notice_test, maintenance_event_saves_at_one_step_and_exits_with_gce_restart_code) {
  scratch_dir dir{"apps-gce"};
  lifeboat::testing::mock_server mock;

  child_process coordinator{{lifeboat::test::built(LIFEBOAT_COORDINATOR), "--port", "0",
                             "--world-size", std::to_string(workers), "--token", token},
                            true};
  output_log service{coordinator};
  auto listening = service.read_until("lifeboat-coordinator: listening on");
  ASSERT_TRUE(listening) << service.text();
  auto port = listening_port(*listening);
  ASSERT_NE(port, 0) << *listening;

  std::vector<std::unique_ptr<child_process>> procs;
  std::vector<std::unique_ptr<output_log>> logs;
  for (int rank = 0; rank < workers; ++rank) {
    auto env = external_service_worker(rank, workers, port, token);
    env.insert({// Detection, not configuration, picks GCE: whatever this test's
                // environment says about the platform is blanked (empty = unset).
                {"GCE_METADATA_HOST", mock.address()},
                {"LIFEBOAT_PLATFORM", ""},
                {"KUBERNETES_SERVICE_HOST", ""},
                {"SLURM_JOB_ID", ""},
                // On a GPU VM GCE's grace period is an hour: save at once instead.
                {"LIFEBOAT_GRACE_PERIOD_S", "0"},
                // Its step tells when training is under way.
                {"LIFEBOAT_STATUS_PORT", "0"}});
    // Training outlasts the test; only the notice ends it.
    procs.push_back(std::make_unique<child_process>(
        endless_demo_command(lifeboat::test::built(LIFEBOAT_DEMO), dir / "ckpt"), true,
        environment_with(env)));
    logs.push_back(std::make_unique<output_log>(*procs.back()));
  }
  int64_t highest_step = 0;
  for (int rank = 0; rank < workers; ++rank) {
    auto& log = *logs[rank];
    auto status = await_training_past(log, "platform gce, restart code 143", notice_after_step,
                                      training_deadline);
    ASSERT_TRUE(status) << log.text();
    ASSERT_GT(status->step(), notice_after_step) << log.text();
    EXPECT_EQ(status->phase(), "training");
    highest_step = std::max(highest_step, status->step());
  }
  ASSERT_TRUE(service.read_until_count(" joined (generation 0)", workers)) << service.text();
  mock.control("gce/maintenance-event", "TERMINATE_ON_HOST_MAINTENANCE");

  std::vector<long long> agreed;
  for (int rank = 0; rank < workers; ++rank) {
    auto& log = *logs[rank];
    log.read_all();
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_EQ(exit_code(*procs[rank]), gce_restart_code) << log.text();
    EXPECT_TRUE(log.contains("committed; exiting with restart code 143")) << log.text();
    auto steps = log.agreed_steps();
    ASSERT_EQ(steps.size(), 1u) << log.text();
    agreed.push_back(steps[0]);
  }
  // The notice reached one or both workers through their own gce source; the
  // step is agreed all the same.
  int noticed = 0;
  for (auto& log : logs) noticed += log->count("notice from gce:maintenance-event");
  EXPECT_GE(noticed, 1);
  EXPECT_EQ(agreed[0], agreed[1]);
  // Saved where training had got to, not at a step already behind it.
  EXPECT_GE(agreed[0], highest_step);
  char name[32];
  std::snprintf(name, sizeof(name), "step-%012lld", agreed[0]);
  EXPECT_TRUE(fs::is_directory(dir.path() / "ckpt" / name)) << name;

  coordinator.kill(SIGTERM);
  EXPECT_EQ(exit_code(coordinator, coordinator_stop_deadline), 0) << service.text();
}

}  // namespace
