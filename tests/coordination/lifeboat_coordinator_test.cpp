// The standalone lifeboat-coordinator process.

#include <gtest/gtest.h>
#include <caf/actor_system.hpp>

#include "actors/coordination_client.hpp"
#include "actors/system_config.hpp"
#include "messages/errors.hpp"
#include "tests/support/child_process.hpp"

using namespace lifeboat;
using namespace lifeboat::test;

namespace {

constexpr std::chrono::seconds deadline{20};
const std::string listening = "lifeboat-coordinator: listening on 127.0.0.1:";

// Reads the child's output until the listening line; returns the port (0: none).
uint16_t wait_for_port(child_process& child) {
  while (auto line = child.read_line(deadline)) {
    auto at = line->find(listening);
    if (at != std::string::npos)
      return static_cast<uint16_t>(std::stoi(line->substr(at + listening.size())));
  }
  return 0;
}

TEST(lifeboat_coordinator, serves_workers_and_stops_cleanly_on_sigterm) {
  child_process coordinator{{LIFEBOAT_COORDINATOR, "--port", "0", "--world-size", "2", "--token",
                             "t", "--heartbeat-timeout-ms", "500"},
                            true};
  auto port = wait_for_port(coordinator);
  ASSERT_NE(port, 0);
  {
    system_config cfg;
    caf::actor_system sys{cfg};
    agent_config acfg;
    acfg.port = port;
    acfg.rank = 1;
    acfg.world_size = 2;
    acfg.token = "t";
    acfg.join_timeout = std::chrono::seconds(5);
    auto client = coordination_client::connect(sys, acfg);
    ASSERT_TRUE(client) << describe(client.error());
    ASSERT_FALSE((*client)->insert("k", "v"));
    acfg.token = "other";
    acfg.rank = 0;
    auto refused = coordination_client::connect(sys, acfg);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error(), make_error(errc::refused));
  }
  coordinator.kill(SIGTERM);
  auto status = coordinator.wait_exit(deadline);
  ASSERT_TRUE(status) << "lifeboat-coordinator hangs on SIGTERM";
  EXPECT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 0);
}

TEST(lifeboat_coordinator, rejects_missing_flags) {
  child_process coordinator{{LIFEBOAT_COORDINATOR, "--port", "0"}, true};
  auto status = coordinator.wait_exit(deadline);
  ASSERT_TRUE(status);
  EXPECT_EQ(WEXITSTATUS(*status), 2);
}

}  // namespace
