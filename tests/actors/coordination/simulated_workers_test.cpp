// 256 simulated workers (tests/support/simulated_workers: real agents,
// sockets, heartbeats, step resolvers and cluster watchers, many to one actor
// system) against one coordination service hosted in this process on an
// actor system of its own: the whole cycle of a job, and a worker killed
// among them.
#include <chrono>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/atoms.hpp"
#include "actors/coordination/worker_listing.hpp"
#include "actors/system_config.hpp"
#include "messages/errors.hpp"
#include "messages/status.pb.h"
#include "tests/actors/coordination/coordination_fixture.hpp"
#include "tests/support/build_tree.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/simulated_workers.hpp"

namespace lifeboat::test {
namespace {

using namespace std::chrono_literals;

constexpr int32_t scale_world_size = 256;
constexpr size_t join_threads = 32;
constexpr size_t leave_threads = 16;
// Generous bounds: a busy 2-core machine runs 256 workers' actors on one
// thread. Each is a limit on a wait, never a pause.
constexpr auto step_timeout = 30s;
constexpr auto barrier_timeout_ms = 30000ms;
constexpr auto line_deadline = 20s;
// Heartbeats as a real worker sends them (lifeboat's defaults): no worker is
// lost for being slow on a loaded machine.
constexpr auto heartbeat_interval = 1000ms;
constexpr auto heartbeat_timeout = 10000ms;
// The rank that gets the notice: not the leader, so the notice takes the hop
// to rank 0 that one on any worker takes.
constexpr int32_t noticed_rank = 200;

std::vector<int32_t> ranks_below(int32_t n) {
  std::vector<int32_t> ranks(static_cast<size_t>(n));
  std::iota(ranks.begin(), ranks.end(), 0);
  return ranks;
}

// The service on the fixture's actor system, the workers on one of their own.
class simulated_workers_test : public service_fixture {
 protected:
  void SetUp() override {
    // The service's and the workers' sockets share this process: over 512.
    if (auto err = sim::raise_fd_limit()) GTEST_SKIP() << describe(err);
    start_service(scale_world_size, heartbeat_timeout);
  }

  void TearDown() override {
    group.reset();
    service_fixture::TearDown();
  }

  void start_group(std::vector<int32_t> ranks) {
    sim::worker_options opts;
    opts.port = port;
    opts.world_size = scale_world_size;
    opts.token = fixture_token;
    opts.heartbeat_interval = heartbeat_interval;
    group = std::make_unique<sim::worker_group>(worker_sys, opts, std::move(ranks));
    auto err = group->join(join_threads);
    ASSERT_FALSE(err) << describe(err);
  }

  // The service's view: how many ranks are in `state` (its status counts
  // them; beyond status_workers_listed_max it lists only some).
  size_t ranks_in(const std::string& state) {
    caf::scoped_actor self{sys};
    size_t count = 0;
    self->request(service, 10s, status_atom::value)
        .receive(
            [&](const wire::ActorStatus& st) {
              EXPECT_LE(static_cast<size_t>(st.workers_size()), status_workers_listed_max);
              auto i = st.metrics().find("coordination_workers_" + state);
              if (i != st.metrics().end()) count = static_cast<size_t>(i->second);
            },
            [&](caf::error& err) { ADD_FAILURE() << describe(err); });
    return count;
  }

  system_config worker_cfg;
  caf::actor_system worker_sys{worker_cfg};
  std::unique_ptr<sim::worker_group> group;
};

TEST_F(simulated_workers_test, join_notice_agreement_barrier_and_leave_of_256) {
  start_group(ranks_below(scale_world_size));
  EXPECT_EQ(ranks_in("alive"), static_cast<size_t>(scale_world_size));
  group->arm();
  group->notice(noticed_rank);
  // Every worker but the leader hears the commit from the service; the
  // leader takes it as it sends it.
  ASSERT_TRUE(group->seen().await_commits(group->index_of(0), step_timeout))
      << "not every worker learned of the agreement";
  group->enter_barrier("scale/barrier", barrier_timeout_ms);
  ASSERT_TRUE(group->seen().await_barrier(step_timeout)) << "the barrier did not complete";
  auto err = group->leave(leave_threads);
  ASSERT_FALSE(err) << describe(err);
  EXPECT_EQ(ranks_in("left"), static_cast<size_t>(scale_world_size));
}

TEST_F(simulated_workers_test, a_worker_killed_among_256_is_named_lost_to_every_other) {
  constexpr int32_t victim = scale_world_size - 1;
  child_process killed{{lifeboat::test::built(COORDINATION_WORKER), "127.0.0.1",
                        std::to_string(port), std::to_string(victim),
                        std::to_string(scale_world_size), fixture_token, "0",
                        std::to_string(heartbeat_interval.count())}};
  ASSERT_EQ(killed.read_line(line_deadline), "joined");
  start_group(ranks_below(victim));
  group->arm();
  killed.kill(SIGKILL);
  ASSERT_TRUE(killed.wait_exit(line_deadline));
  ASSERT_TRUE(group->seen().await_failures(victim, true, group->size(), step_timeout))
      << "not every worker heard that rank " << victim << " was lost";
  EXPECT_EQ(ranks_in("lost"), 1u);
  EXPECT_EQ(ranks_in("alive"), static_cast<size_t>(victim));
}

}  // namespace
}  // namespace lifeboat::test
