// Azure end to end: a lifeboat-demo worker on "Azure" (the loopback metadata
// mock's Scheduled Events, LIFEBOAT_AZURE_METADATA) trains until a Preempt
// event is scheduled, saves, and on its way out acknowledges the event
// (POST StartRequests, so the platform may go ahead at once) before it exits
// with the restart code.

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "tests/apps/app_test_support.hpp"
#include "tests/apps/status_client.hpp"
#include "tests/platform/mock_server.hpp"
#include "tests/support/build_tree.hpp"

namespace {

using namespace std::chrono_literals;
using namespace lifeboat::test;

constexpr int restart_code = 42;
constexpr int64_t notice_after_step = 20;
constexpr auto training_deadline = 30s;
constexpr char event_id[] = "602d9444";
constexpr char preempt_events[] = R"([{"EventId": "602d9444", "EventType": "Preempt",
  "ResourceType": "VirtualMachine", "Resources": ["vm1"], "EventStatus": "Scheduled",
  "NotBefore": "Mon, 11 Apr 2022 22:26:58 GMT", "Description": "spot eviction",
  "EventSource": "Platform", "DurationInSeconds": -1}])";

TEST(azure_notice_test, preempt_event_is_saved_for_and_acknowledged_before_the_exit) {
  scratch_dir dir{"apps-azure"};
  lifeboat::testing::mock_server mock;
  // One worker alone (local mode): whatever this test's environment says
  // about a cluster or the platform is blanked (empty = unset).
  std::map<std::string, std::string> env{{"LIFEBOAT_PLATFORM", "azure"},
                                         {"LIFEBOAT_AZURE_METADATA", mock.address()},
                                         {"LIFEBOAT_GRACE_PERIOD_S", "0"},
                                         {"LIFEBOAT_STATUS_PORT", "0"},
                                         {"LIFEBOAT_RANK", ""},
                                         {"LIFEBOAT_WORLD_SIZE", ""},
                                         {"LIFEBOAT_COORDINATOR", ""},
                                         {"TF_CONFIG", ""},
                                         {"RANK", ""},
                                         {"WORLD_SIZE", ""},
                                         {"SLURM_PROCID", ""},
                                         {"SLURM_NTASKS", ""}};
  // Training outlasts the test; only the notice ends it.
  child_process worker{endless_demo_command(lifeboat::test::built(LIFEBOAT_DEMO), dir / "ckpt"),
                       true, environment_with(env)};
  output_log log{worker};
  auto status = await_training_past(log, "platform azure, restart code 42", notice_after_step,
                                    training_deadline);
  ASSERT_TRUE(status) << log.text();
  EXPECT_EQ(mock.read("azure/acknowledged"), "");

  mock.control("azure/events", preempt_events);
  log.read_all();
  EXPECT_EQ(exit_code(worker), restart_code) << log.text();
  EXPECT_EQ(log.count("notice from azure:Preempt"), 1) << log.text();
  auto steps = log.agreed_steps();
  ASSERT_EQ(steps.size(), 1u) << log.text();
  EXPECT_GE(steps[0], status->step());
  EXPECT_TRUE(log.contains("committed; exiting with restart code 42")) << log.text();
  // Acknowledged by the worker itself before it exited, not later.
  EXPECT_EQ(mock.read("azure/acknowledged"), std::string{event_id} + "\n");
}

}  // namespace
