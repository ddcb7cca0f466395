// The step resolver actor over a real coordination service: rank 0's
// resolver (the leader) behind its cluster watcher, with a step gate whose
// trainer is still, and rank 1 played by a scoped actor on a client of its
// own. What step_resolver_state decides (its own tests) must reach the wire
// and the gate: a notice becomes a query, the reports a commit the trainer
// stops at, a grace period's final save starts with no further notice, and
// after a peer's failure a notice starts no round.
#include "actors/preemption/step_resolver.hpp"

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "actors/coordination/coordination_events.hpp"
#include "actors/preemption/cluster_watcher.hpp"
#include "actors/preemption/protocol.hpp"
#include "messages/preemption.pb.h"
#include "messages/status.pb.h"
#include "messages/wire.hpp"
#include "platform/clock.hpp"
#include "tests/actors/coordination/coordination_fixture.hpp"
#include "tests/support/actor_probe.hpp"

using namespace lifeboat;
using namespace lifeboat::test;

namespace {

constexpr int world = 2;
constexpr int64_t trainer_completed = 5;  // the step the still trainer completed
constexpr int64_t follower_stop = 9;      // where rank 1 says it stops

class step_resolver_test : public service_fixture {
 protected:
  void SetUp() override { start_service(world); }

  void start(int64_t grace_period_ms) {
    for (int r = 0; r < world; ++r) {
      auto cfg = agent_cfg(r);
      cfg.world_size = world;
      auto client = coordination_client::connect(sys, cfg);
      ASSERT_TRUE(client) << describe(client.error());
      clients_[r] = std::move(*client);
    }
    clients_[1]->subscribe(follower_);
    completed_ = trainer_completed;
    gate_ = std::make_shared<step_gate>(completed_, action_);
    step_resolver_state::config cfg;
    cfg.rank = 0;
    cfg.world_size = world;
    cfg.grace_period_ms = grace_period_ms;
    resolver_ = spawn_step_resolver(sys, cfg, step_resolver_links{gate_, clients_[0], nullptr});
    watcher_ = spawn_cluster_watcher(sys, cluster_watcher_peers{resolver_, {}, {}});
    clients_[0]->subscribe(watcher_);
  }

  void TearDown() override {
    // The resolver holds rank 0's client: each leaves here, so that its
    // destructor, wherever it runs, does not wait to leave.
    for (auto& client : clients_) {
      if (client) {
        EXPECT_FALSE(client->leave());
      }
    }
    for (auto& actor : {watcher_, resolver_})
      if (actor) driver_->send_exit(actor, caf::exit_reason::user_shutdown);
    for (auto& client : clients_) client.reset();
    service_fixture::TearDown();
  }

  void notice(int64_t deadline_unix_ms) {
    wire::Notice n;
    n.set_source("test");
    n.set_reason("a test's notice");
    n.set_deadline_unix_ms(deadline_unix_ms);
    driver_->send(resolver_, notice_atom::value, n);
  }

  // The next protocol message rank 1 receives, if one comes in time.
  std::optional<wire::ProtocolMessage> next_at_follower() {
    std::optional<wire::ProtocolMessage> out;
    follower_->receive(
        [&](const peer_message& msg) {
          wire::ProtocolMessage body;
          if (msg.channel == protocol_channel && body.ParseFromString(msg.payload)) out = body;
        },
        caf::after(wait_bound) >> [] {});
    return out;
  }

  // Rank 1 answers `query` with its stop step.
  void report(const wire::StepQuery& query, int64_t stop_step) {
    wire::ProtocolMessage msg;
    auto* r = msg.mutable_report();
    r->set_round(query.round());
    r->set_rank(1);
    r->set_stop_step(stop_step);
    clients_[1]->send(0, protocol_channel, msg.SerializeAsString());
  }

  // A query reaches rank 1, which reports `stop_step`; the commit that comes
  // back, or nothing when a step fails (the test has failed then).
  std::optional<wire::StepCommit> round_at_follower(int64_t stop_step, bool final_save) {
    auto query = next_at_follower();
    EXPECT_TRUE(query && query->has_query()) << "no query at rank 1";
    if (!query || !query->has_query()) return std::nullopt;
    EXPECT_EQ(query->query().final_save(), final_save);
    report(query->query(), stop_step);
    auto commit = next_at_follower();
    EXPECT_TRUE(commit && commit->has_commit()) << "no commit at rank 1";
    if (!commit || !commit->has_commit()) return std::nullopt;
    return commit->commit();
  }

  std::map<std::string, double> metrics() {
    auto st = status_of(driver_, resolver_);
    return {st.metrics().begin(), st.metrics().end()};
  }

  std::atomic<int64_t> completed_{0};
  std::atomic<int64_t> action_{step_gate::no_step};
  std::shared_ptr<step_gate> gate_;
  std::shared_ptr<coordination_client> clients_[world];
  caf::scoped_actor driver_{sys};
  caf::scoped_actor follower_{sys};
  caf::actor resolver_;
  caf::actor watcher_;
};

TEST_F(step_resolver_test, a_notice_becomes_a_commit_of_the_furthest_step_the_trainer_stops_at) {
  ASSERT_NO_FATAL_FAILURE(start(0));
  notice(unix_now_ms());
  // Without a grace period the first save is the final one.
  auto commit = round_at_follower(follower_stop, true);
  ASSERT_TRUE(commit);
  EXPECT_EQ(commit->step(), follower_stop);
  EXPECT_TRUE(commit->final_save());
  // The leader took its own commit as it sent it: a round trip later its
  // trainer, in the step after the one it completed, is to stop at rank 1's
  // step, further than its own.
  auto m = metrics();
  EXPECT_EQ(m.at("agreed_step"), follower_stop);
  EXPECT_EQ(m.at("agreement_rounds_total"), 1);
  EXPECT_EQ(action_.load(), follower_stop);
  EXPECT_EQ(status_of(driver_, resolver_).phase(), "checkpoint_scheduled");
}

TEST_F(step_resolver_test, a_grace_periods_final_save_starts_with_no_further_notice) {
  // Room for a first save: the deadline lies beyond the exit margin (1 s)
  // and twice the first round's estimated save cycle.
  constexpr int64_t grace_period_ms = 3000;
  ASSERT_NO_FATAL_FAILURE(start(grace_period_ms));
  notice(unix_now_ms() + grace_period_ms);
  auto first = round_at_follower(follower_stop, false);
  ASSERT_TRUE(first);
  EXPECT_FALSE(first->final_save());
  // The first save is made and committed (the commit rank's writer tells
  // every worker); until then the final save waits.
  driver_->send(resolver_, saving_atom::value, follower_stop);
  wire::ProtocolMessage committed;
  committed.mutable_committed()->set_step(follower_stop);
  clients_[1]->send(0, protocol_channel, committed.SerializeAsString());
  // The final save's round comes from the resolver alone, before the deadline.
  constexpr int64_t final_stop = 20;
  auto last = round_at_follower(final_stop, true);
  ASSERT_TRUE(last);
  EXPECT_TRUE(last->final_save());
  EXPECT_EQ(last->step(), final_stop);
  EXPECT_EQ(metrics().at("agreement_rounds_total"), 2);
  EXPECT_EQ(action_.load(), final_stop);
}

TEST_F(step_resolver_test, after_a_peers_failure_a_notice_starts_no_round) {
  ASSERT_NO_FATAL_FAILURE(start(0));
  driver_->send(resolver_, peer_failure{1, 3, "rank 1 failed", false});
  notice(unix_now_ms());
  // A round trip: both were handled. No checkpoint after a failure: the
  // trainer is not held, and rank 1 is asked nothing.
  EXPECT_EQ(metrics().at("agreement_rounds_total"), 0);
  EXPECT_EQ(action_.load(), step_gate::no_step);
  EXPECT_EQ(gate_->waiting_at(), -1);
}

}  // namespace
