// The checkpoint writer over a real coordination service and clients: what
// the resolver hears of a save, that only the commit rank tells every worker
// the save is committed, and that a failed save reaches every worker as this
// worker's error.
#include "actors/preemption/checkpoint_writer.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "actors/atoms.hpp"
#include "actors/coordination/coordination_events.hpp"
#include "actors/preemption/checkpoint_record.hpp"
#include "actors/preemption/protocol.hpp"
#include "messages/preemption.pb.h"
#include "messages/status.pb.h"
#include "messages/wire.hpp"
#include "tests/actors/coordination/coordination_fixture.hpp"
#include "tests/support/actor_probe.hpp"

using namespace lifeboat;
using namespace lifeboat::test;

namespace {

wire::CheckpointInfo info_of(int64_t step) {
  wire::CheckpointInfo info;
  info.set_step(step);
  info.set_path("/ckpt/step-" + std::to_string(step));
  info.set_bytes(4096);
  info.set_seconds(0.25);
  return info;
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

// The keys of the checkpoint records in the service once they are `want`,
// asked again (every few ms) until they are or wait_bound passed: the
// writer records after its answer to the resolver.
std::vector<std::string> await_records(coordination_client& client,
                                       const std::vector<std::string>& want) {
  auto until = std::chrono::steady_clock::now() + wait_bound;
  std::vector<std::string> keys;
  for (;;) {
    keys.clear();
    if (auto records = client.get_prefix(checkpoint_key_prefix))
      for (auto& [key, value] : *records) keys.push_back(key);
    if (keys == want || std::chrono::steady_clock::now() >= until) return keys;
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
}

// The names of the tiers in the record under `key` once they are `want`,
// asked again (every few ms) until they are or wait_bound passed.
std::vector<std::string> await_record_tiers(coordination_client& client, const std::string& key,
                                            const std::vector<std::string>& want) {
  auto until = std::chrono::steady_clock::now() + wait_bound;
  std::vector<std::string> names;
  for (;;) {
    names.clear();
    wire::CheckpointInfo record;
    if (auto value = client.try_get(key); value && *value && record.ParseFromString(**value))
      for (const auto& tier : record.tiers()) names.push_back(tier.name());
    if (names == want || std::chrono::steady_clock::now() >= until) return names;
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
}

// Ranks 0 and 1 joined, each with a scoped actor subscribed (what its
// cluster watcher would hear), and a writer on one rank's client with
// `resolver_` in place of the step resolver; rank 0 commits.
class writer_test : public service_fixture {
 protected:
  void start_writer(int rank, wire::CheckpointInfo restored = {},
                    bool restored_in_directory = false) {
    for (int r = 0; r < 2; ++r) {
      clients_[r] = join(r);
      ASSERT_TRUE(clients_[r]);
    }
    clients_[0]->subscribe(worker0_);
    clients_[1]->subscribe(worker1_);
    writer_ = sys.spawn(checkpoint_writer, clients_[rank], caf::actor{resolver_}, rank == 0,
                        std::move(restored), restored_in_directory);
  }

  void TearDown() override {
    if (writer_) resolver_->send_exit(writer_, caf::exit_reason::user_shutdown);
    for (auto& client : clients_) client.reset();
    service_fixture::TearDown();
  }

  std::shared_ptr<coordination_client> clients_[2];
  caf::scoped_actor resolver_{sys};
  caf::scoped_actor worker0_{sys};
  caf::scoped_actor worker1_{sys};
  checkpoint_writer_actor writer_;
};

TEST_F(writer_test, the_commit_rank_tells_every_worker_and_the_resolver_hears_the_time) {
  ASSERT_NO_FATAL_FAILURE(start_writer(0));
  resolver_->send(writer_, saving_atom::value, int64_t{30});
  EXPECT_EQ(status_of(resolver_, writer_).state(), "saving step 30");
  resolver_->receive([](saving_atom, int64_t step) { EXPECT_EQ(step, 30); },
                     caf::after(wait_bound) >> [] { FAIL() << "no saving_atom"; });

  resolver_->send(writer_, saved_atom::value, int64_t{30}, true, info_of(30), 0.25);
  resolver_->receive([](ckpt_time_atom, double seconds) { EXPECT_EQ(seconds, 0.25); },
                     caf::after(wait_bound) >> [] { FAIL() << "no ckpt_time_atom"; });
  for (auto* worker : {&worker0_, &worker1_}) {
    auto commit = next_commit(*worker);
    ASSERT_TRUE(commit);
    EXPECT_EQ(commit->step(), 30);
    EXPECT_TRUE(commit->final_save());
  }
  auto st = status_of(resolver_, writer_);
  EXPECT_EQ(st.state(), "idle");
  EXPECT_EQ(st.last_checkpoint().path(), "/ckpt/step-30");
  EXPECT_EQ(st.metrics().at("saves_total"), 1);
  EXPECT_EQ(st.metrics().at("last_checkpoint_bytes"), 4096);
}

TEST_F(writer_test, its_status_shows_what_the_worker_restored_and_from_which_tier) {
  auto restored = info_of(20);
  auto* tier = restored.add_tiers();
  tier->set_name("memory");
  tier->set_seconds(0.125);
  ASSERT_NO_FATAL_FAILURE(start_writer(1, restored));
  auto st = status_of(resolver_, writer_);
  EXPECT_EQ(st.restored().step(), 20);
  ASSERT_EQ(st.restored().tiers_size(), 1);
  EXPECT_EQ(st.restored().tiers(0).name(), "memory");
  EXPECT_EQ(st.restored().tiers(0).seconds(), 0.125);
}

TEST_F(writer_test, another_rank_reports_its_save_but_commits_nothing) {
  ASSERT_NO_FATAL_FAILURE(start_writer(1));
  resolver_->send(writer_, saved_atom::value, int64_t{12}, false, info_of(12), 0.5);
  resolver_->receive([](ckpt_time_atom, double seconds) { EXPECT_EQ(seconds, 0.5); },
                     caf::after(wait_bound) >> [] { FAIL() << "no ckpt_time_atom"; });
  // After a round trip the writer is done with the save, so whatever it sent
  // through rank 1's agent is ahead of rank 1's marker: rank 0 sees the
  // marker first only if the writer sent nothing.
  EXPECT_EQ(status_of(resolver_, writer_).metrics().at("saves_total"), 1);
  clients_[1]->send(0, "marker", "after the save");
  worker0_->receive([](const peer_message& msg) { EXPECT_EQ(msg.channel, "marker"); },
                    caf::after(wait_bound) >> [] { FAIL() << "no marker"; });
}

TEST_F(writer_test, a_failed_save_is_every_workers_error_naming_this_rank) {
  ASSERT_NO_FATAL_FAILURE(start_writer(1));
  resolver_->send(writer_, save_failed_atom::value, int64_t{7}, std::string{"disk full"});
  worker0_->receive(
      [](const peer_failure& failure) {
        EXPECT_EQ(failure.rank, 1);
        EXPECT_FALSE(failure.lost);
        EXPECT_EQ(failure.code, static_cast<int32_t>(errc::io_error));
        EXPECT_EQ(failure.message, "checkpoint save at step 7 failed: disk full");
      },
      caf::after(wait_bound) >> [] { FAIL() << "no peer_failure"; });
  EXPECT_EQ(status_of(resolver_, writer_).metrics().at("save_failures_total"), 1);
}

// The checkpoint a worker went on from, then each save, is recorded for a
// coordinator's status; each record replaces the one before, so the service
// keeps one per worker. The restored one carries no seconds: its save's are
// not known here.
TEST_F(writer_test, records_the_restored_checkpoint_then_each_save_in_place_of_the_last) {
  auto restored = info_of(20);
  restored.add_tiers()->set_name("memory");
  restored.mutable_tiers(0)->set_seconds(0.125);
  ASSERT_NO_FATAL_FAILURE(start_writer(1, restored));
  auto& client = *clients_[0];
  ASSERT_EQ(await_records(client, {checkpoint_record_key(20, 1)}),
            std::vector<std::string>{checkpoint_record_key(20, 1)});
  auto first = client.try_get(checkpoint_record_key(20, 1));
  ASSERT_TRUE(first && *first);
  wire::CheckpointInfo record;
  ASSERT_TRUE(record.ParseFromString(**first));
  EXPECT_EQ(record.path(), "/ckpt/step-20");
  EXPECT_EQ(record.seconds(), 0);
  ASSERT_EQ(record.tiers_size(), 1);
  EXPECT_EQ(record.tiers(0).seconds(), 0);

  for (int64_t step : {25, 30}) {
    resolver_->send(writer_, saved_atom::value, step, false, info_of(step), 0.5);
    EXPECT_EQ(await_records(client, {checkpoint_record_key(step, 1)}),
              std::vector<std::string>{checkpoint_record_key(step, 1)});
  }
  auto last = client.try_get(checkpoint_record_key(30, 1));
  ASSERT_TRUE(last && *last);
  ASSERT_TRUE(record.ParseFromString(**last));
  EXPECT_EQ(record.step(), 30);
  EXPECT_EQ(record.bytes(), 4096);
  EXPECT_EQ(record.seconds(), 0.25);
}

// The record of a restored checkpoint names the tiers that hold it, for the
// coordinator's status: the one read, and the directory where it committed
// there too. The worker's own status names the tier it read.
TEST_F(writer_test, the_restored_record_names_the_directory_too_where_it_holds_the_checkpoint) {
  auto restored = info_of(20);
  restored.add_tiers()->set_name("memory");
  ASSERT_NO_FATAL_FAILURE(start_writer(1, restored, true));
  const std::vector<std::string> both{"memory", "directory"};
  EXPECT_EQ(await_record_tiers(*clients_[0], checkpoint_record_key(20, 1), both), both);
  auto st = status_of(resolver_, writer_);
  ASSERT_EQ(st.restored().tiers_size(), 1);
  EXPECT_EQ(st.restored().tiers(0).name(), "memory");
}

// A checkpoint restored from memory that the directory lacked (a final save
// that committed in memory only) is written there in the background; then
// its record names the directory too, still one record for this worker.
TEST_F(writer_test, a_restored_checkpoint_persisted_to_the_directory_is_recorded_with_it) {
  auto restored = info_of(20);
  restored.add_tiers()->set_name("memory");
  ASSERT_NO_FATAL_FAILURE(start_writer(1, restored, false));
  auto& client = *clients_[0];
  auto key = checkpoint_record_key(20, 1);
  const std::vector<std::string> memory{"memory"};
  ASSERT_EQ(await_record_tiers(client, key, memory), memory);
  resolver_->send(writer_, persisted_atom::value, int64_t{20});
  const std::vector<std::string> both{"memory", "directory"};
  EXPECT_EQ(await_record_tiers(client, key, both), both);
  EXPECT_EQ(await_records(client, {key}), std::vector<std::string>{key});
}

}  // namespace
