#pragma once

// The fixture the status endpoint's socket tests share: a real endpoint on a
// free loopback port (rank 0 of 2) that observes small real actors with fixed
// answers (status_test_support.hpp).

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include "actors/status/status_endpoint.hpp"
#include "actors/system_config.hpp"
#include "messages/errors.hpp"
#include "messages/status.pb.h"
#include "platform/http_client.hpp"
#include "tests/actors/status/status_test_support.hpp"

namespace lifeboat::test {

class status_endpoint_fixture : public testing::Test {
 protected:
  void TearDown() override {
    stop_status_endpoint(endpoint_);
    for (auto& a : actors_) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    actors_.clear();
  }

  /// A fixed actor that answers `status`; TearDown stops it.
  caf::actor spawn_fixed(const wire::ActorStatus& status) {
    actors_.push_back(sys_.spawn(fixed_status_actor, status));
    return actors_.back();
  }

  /// The endpoint over one fixed actor per answer, besides what `cfg`
  /// observes already; its port goes to port_.
  void start(const std::vector<wire::ActorStatus>& answers, status_endpoint_config cfg = {}) {
    for (const auto& a : answers) cfg.observed.push_back(spawn_fixed(a));
    cfg.rank = 0;
    cfg.world_size = 2;
    auto spawned = spawn_status_endpoint(sys_, std::move(cfg));
    ASSERT_TRUE(spawned) << describe(spawned.error());
    endpoint_ = spawned->first;
    port_ = spawned->second;
    ASSERT_NE(port_, 0);
  }

  /// An HTTP request to the endpoint; a failed one fails the test.
  http_response get(const std::string& target, const std::string& method = "GET") {
    http_request req;
    req.method = method;
    req.host = "127.0.0.1";
    req.port = port_;
    req.target = target;
    auto res = http_send(req, http_timeout);
    EXPECT_TRUE(res) << target << ": " << describe(res.error());
    return res ? *res : http_response{};
  }

  static constexpr auto http_timeout = std::chrono::seconds{5};

  system_config cfg_;
  caf::actor_system sys_{cfg_};
  std::vector<caf::actor> actors_;
  status_endpoint_actor endpoint_;
  uint16_t port_ = 0;
};

}  // namespace lifeboat::test
