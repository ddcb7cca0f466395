// The cluster watcher between the coordination agent and the worker's
// actors: which of them hears a protocol message, a commit, a failure, and
// that a stranger's bytes reach none of them. The peers are scoped actors.
#include "actors/preemption/cluster_watcher.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/others.hpp>
#include <caf/scoped_actor.hpp>

#include <gtest/gtest.h>

#include "actors/atoms.hpp"
#include "actors/coordination/coordination_events.hpp"
#include "actors/preemption/decision_recorder.hpp"
#include "actors/preemption/protocol.hpp"
#include "actors/system_config.hpp"
#include "messages/preemption.pb.h"
#include "messages/status.pb.h"
#include "messages/wire.hpp"
#include "tests/support/actor_probe.hpp"

namespace lifeboat {
namespace {

using test::wait_bound;

class cluster_watcher_test : public ::testing::Test {
 protected:
  void SetUp() override {
    watcher_ = spawn_cluster_watcher(
        sys_, cluster_watcher_peers{
                  caf::actor{resolver_},
                  // Scoped actors stand in for the typed peers and take what they are sent.
                  caf::actor_cast<checkpoint_writer_actor>(caf::actor{writer_}),
                  caf::actor_cast<exit_controller_actor>(caf::actor{exit_controller_})});
  }

  void TearDown() override { driver_->send_exit(watcher_, caf::exit_reason::user_shutdown); }

  void deliver(const std::string& channel, const std::string& payload) {
    driver_->send(watcher_, peer_message{2, channel, payload});
  }

  // A round trip after what the driver sent: the watcher has handled it, and
  // whatever it forwards is in the peers' mailboxes.
  std::map<std::string, double> metrics() {
    auto st = test::status_of(driver_, watcher_);
    return {st.metrics().begin(), st.metrics().end()};
  }

  // How many messages `peer` holds; it takes them all.
  static int drain(caf::scoped_actor& peer) {
    return test::take_held(
        peer, caf::others >> [](caf::message_view&) -> caf::result<caf::message> {
          return caf::message{};
        });
  }

  system_config cfg_;
  caf::actor_system sys_{cfg_};
  caf::scoped_actor driver_{sys_};
  caf::scoped_actor resolver_{sys_};
  caf::scoped_actor writer_{sys_};
  caf::scoped_actor exit_controller_{sys_};
  caf::actor watcher_;
};

TEST_F(cluster_watcher_test, a_protocol_message_goes_to_the_resolver_alone) {
  wire::ProtocolMessage msg;
  msg.mutable_query()->set_round(7);
  deliver(protocol_channel, msg.SerializeAsString());
  EXPECT_EQ(metrics().at("protocol_messages_total"), 1);
  bool got = false;
  resolver_->receive(
      [&](const wire::ProtocolMessage& m) {
        got = true;
        EXPECT_EQ(m.query().round(), 7u);
      },
      caf::after(wait_bound) >> [] {});
  EXPECT_TRUE(got);
  EXPECT_EQ(drain(writer_), 0);
  EXPECT_EQ(drain(exit_controller_), 0);
}

// The commit is recorded before the exit controller hears of it: the trainer
// may leave as soon as it does, and an event recorded later is not published.
TEST_F(cluster_watcher_test, a_commit_reaches_the_resolver_the_writer_and_the_exit_controller) {
  auto& recorder = decision_recorder::process();
  auto recorded = [&] {
    auto events = recorder.events();
    return std::count_if(events.begin(), events.end(), [](const wire::DecisionEvent& e) {
      return e.event() == decision_event::commit && e.step() == 41;
    });
  };
  auto before = recorded();
  wire::ProtocolMessage msg;
  msg.mutable_committed()->set_step(41);
  msg.mutable_committed()->set_final_save(true);
  deliver(protocol_channel, msg.SerializeAsString());
  metrics();
  EXPECT_EQ(drain(resolver_), 1);
  for (auto* peer : {&writer_, &exit_controller_}) {
    bool got = false;
    (*peer)->receive(
        [&](committed_atom, const wire::SaveCommitted& c) {
          got = true;
          EXPECT_EQ(c.step(), 41);
          EXPECT_TRUE(c.final_save());
          EXPECT_EQ(recorded(), before + 1);
        },
        caf::after(std::chrono::seconds{0}) >> [] {});
    EXPECT_TRUE(got);
  }
}

TEST_F(cluster_watcher_test, a_failure_reaches_the_resolver_and_the_exit_controller) {
  driver_->send(watcher_, peer_failure{3, 1, "step threw", false});
  EXPECT_EQ(metrics().at("peer_failures_total"), 1);
  for (auto* peer : {&resolver_, &exit_controller_}) {
    bool got = false;
    (*peer)->receive(
        [&](const peer_failure& f) {
          got = true;
          EXPECT_EQ(f.rank, 3);
          EXPECT_EQ(f.message, "step threw");
          EXPECT_FALSE(f.lost);
        },
        caf::after(std::chrono::seconds{0}) >> [] {});
    EXPECT_TRUE(got);
  }
  EXPECT_EQ(drain(writer_), 0);
}

TEST_F(cluster_watcher_test, garbage_and_other_channels_reach_nobody) {
  deliver(protocol_channel, std::string("\xff\xff\xff\xff not a protocol message", 27));
  deliver("someone/else", "whatever");
  auto m = metrics();
  EXPECT_EQ(m.at("protocol_malformed_total"), 1);
  EXPECT_EQ(m.at("protocol_messages_total"), 0);
  for (auto* peer : {&resolver_, &writer_, &exit_controller_}) EXPECT_EQ(drain(*peer), 0);
}

}  // namespace
}  // namespace lifeboat
