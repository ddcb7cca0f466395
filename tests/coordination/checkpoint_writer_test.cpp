// The checkpoint writer over a real coordination service and clients: what
// the resolver hears of a save, that only the commit rank tells every worker
// the save is committed, and that a failed save reaches every worker as this
// worker's error.
#include "actors/checkpoint_writer.hpp"

#include <chrono>
#include <optional>
#include <string>

#include "actors/atoms.hpp"
#include "actors/coordination_events.hpp"
#include "actors/protocol.hpp"
#include "messages/preemption.pb.h"
#include "messages/status.pb.h"
#include "messages/wire.hpp"
#include "tests/coordination/coordination_fixture.hpp"

using namespace lifeboat;
using namespace lifeboat::test;

namespace {

using namespace std::chrono_literals;
using writer_test = service_fixture;

// Bounds every wait of this file; a wait that runs into it fails the test.
constexpr auto wait_bound = 10s;

wire::CheckpointInfo info_of(int64_t step) {
  wire::CheckpointInfo info;
  info.set_step(step);
  info.set_path("/ckpt/step-" + std::to_string(step));
  info.set_bytes(4096);
  info.set_seconds(0.25);
  return info;
}

wire::ActorStatus status_of(caf::scoped_actor& self, const caf::actor& writer) {
  wire::ActorStatus out;
  self->request(writer, wait_bound, status_atom::value)
      .receive([&](const wire::ActorStatus& st) { out = st; },
               [](caf::error& err) { FAIL() << caf::to_string(err); });
  return out;
}

// The SaveCommitted that `worker` receives next on the protocol channel.
std::optional<wire::SaveCommitted> next_commit(caf::scoped_actor& worker) {
  std::optional<wire::SaveCommitted> out;
  worker->receive(
      [&](const peer_message& msg) {
        wire::ProtocolMessage body;
        if (msg.channel == protocol_channel && body.ParseFromString(msg.payload) &&
            body.has_committed())
          out = body.committed();
      },
      caf::after(wait_bound) >> [] {});
  return out;
}

TEST_F(writer_test, the_commit_rank_tells_every_worker_and_the_resolver_hears_the_time) {
  auto rank0 = join(0);
  auto rank1 = join(1);
  ASSERT_TRUE(rank0 && rank1);
  caf::scoped_actor resolver{sys};
  caf::scoped_actor worker0{sys};
  caf::scoped_actor worker1{sys};
  rank0->subscribe(worker0);
  rank1->subscribe(worker1);
  auto writer = sys.spawn(checkpoint_writer, rank0.get(), caf::actor{resolver}, true);

  resolver->send(writer, saving_atom::value, int64_t{30});
  EXPECT_EQ(status_of(resolver, writer).state(), "saving step 30");
  resolver->receive([](saving_atom, int64_t step) { EXPECT_EQ(step, 30); },
                    caf::after(wait_bound) >> [] { FAIL() << "no saving_atom"; });

  resolver->send(writer, saved_atom::value, int64_t{30}, true, info_of(30), 0.25);
  resolver->receive([](ckpt_time_atom, double seconds) { EXPECT_EQ(seconds, 0.25); },
                    caf::after(wait_bound) >> [] { FAIL() << "no ckpt_time_atom"; });
  for (auto* worker : {&worker0, &worker1}) {
    auto commit = next_commit(*worker);
    ASSERT_TRUE(commit);
    EXPECT_EQ(commit->step(), 30);
    EXPECT_TRUE(commit->final_save());
  }
  auto st = status_of(resolver, writer);
  EXPECT_EQ(st.state(), "idle");
  EXPECT_EQ(st.last_checkpoint().path(), "/ckpt/step-30");
  EXPECT_EQ(st.metrics().at("saves_total"), 1);
  EXPECT_EQ(st.metrics().at("last_checkpoint_bytes"), 4096);
  resolver->send_exit(writer, caf::exit_reason::user_shutdown);
}

TEST_F(writer_test, another_rank_reports_its_save_but_commits_nothing) {
  auto rank0 = join(0);
  auto rank1 = join(1);
  ASSERT_TRUE(rank0 && rank1);
  caf::scoped_actor resolver{sys};
  caf::scoped_actor worker0{sys};
  rank0->subscribe(worker0);
  auto writer = sys.spawn(checkpoint_writer, rank1.get(), caf::actor{resolver}, false);
  resolver->send(writer, saved_atom::value, int64_t{12}, false, info_of(12), 0.5);
  resolver->receive([](ckpt_time_atom, double seconds) { EXPECT_EQ(seconds, 0.5); },
                    caf::after(wait_bound) >> [] { FAIL() << "no ckpt_time_atom"; });
  // After a round trip the writer is done with the save, so whatever it sent
  // through rank 1's agent is ahead of rank 1's marker: rank 0 sees the
  // marker first only if the writer sent nothing.
  EXPECT_EQ(status_of(resolver, writer).metrics().at("saves_total"), 1);
  rank1->send(0, "marker", "after the save");
  worker0->receive([](const peer_message& msg) { EXPECT_EQ(msg.channel, "marker"); },
                   caf::after(wait_bound) >> [] { FAIL() << "no marker"; });
  resolver->send_exit(writer, caf::exit_reason::user_shutdown);
}

TEST_F(writer_test, a_failed_save_is_every_workers_error_naming_this_rank) {
  auto rank0 = join(0);
  auto rank2 = join(2);
  ASSERT_TRUE(rank0 && rank2);
  caf::scoped_actor resolver{sys};
  caf::scoped_actor worker0{sys};
  rank0->subscribe(worker0);
  auto writer = sys.spawn(checkpoint_writer, rank2.get(), caf::actor{resolver}, false);
  resolver->send(writer, save_failed_atom::value, int64_t{7}, std::string{"disk full"});
  worker0->receive(
      [](const peer_failure& failure) {
        EXPECT_EQ(failure.rank, 2);
        EXPECT_FALSE(failure.lost);
        EXPECT_EQ(failure.code, static_cast<int32_t>(errc::io_error));
        EXPECT_EQ(failure.message, "checkpoint save at step 7 failed: disk full");
      },
      caf::after(wait_bound) >> [] { FAIL() << "no peer_failure"; });
  EXPECT_EQ(status_of(resolver, writer).metrics().at("save_failures_total"), 1);
  resolver->send_exit(writer, caf::exit_reason::user_shutdown);
}

}  // namespace
