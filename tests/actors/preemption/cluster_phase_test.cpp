#include "actors/preemption/cluster_phase.hpp"

#include <gtest/gtest.h>

#include "actors/preemption/checkpoint_record.hpp"
#include "actors/preemption/protocol.hpp"
#include "tests/actors/coordination/state_fixture.hpp"

using namespace lifeboat;
using namespace lifeboat::test;

namespace {

// The preemption protocol's reading of a service driven directly: what the
// service's status answer shows once annotate_preemption_status completed it.
class cluster_phase_test : public state_test {
 protected:
  wire::ActorStatus annotated() {
    wire::ActorStatus status;
    for (auto& row : st.workers(now)) *status.add_workers() = row;
    annotate_preemption_status(st, status);
    return status;
  }

  phase of_cluster() { return *phase_from_string(annotated().phase()); }

  void beat(conn_id conn, phase p) {
    wire::Envelope hb;
    hb.mutable_heartbeat()->set_step(5);
    hb.mutable_heartbeat()->set_status(heartbeat_status(p));
    hb.mutable_heartbeat()->set_paused(pauses_steps(p));
    request(conn, hb);
  }
};

TEST(heartbeat_status, names_the_phase_and_pauses_steps_only_while_saving) {
  for (auto p : all_phases) {
    EXPECT_EQ(phase_from_string(heartbeat_status(p)), p);
    EXPECT_EQ(pauses_steps(p), p == phase::saving) << to_string(p);
  }
}

// A coordinator has no step resolver: its phase is what the service sees.
TEST_F(cluster_phase_test, follows_notices_and_departures) {
  EXPECT_EQ(of_cluster(), phase::training);
  join_all();
  request(1, insert(1, "lifeboat/noticed", "not a notice key"));
  EXPECT_EQ(of_cluster(), phase::training);
  request(2, insert(2, notice_key_prefix + std::string{"1"}, "notice"));
  EXPECT_EQ(of_cluster(), phase::notice_received);
  wire::Envelope leave;
  leave.mutable_leave()->set_id(9);
  request(3, leave);
  EXPECT_EQ(of_cluster(), phase::exiting);
  // A new generation starts afresh.
  ASSERT_TRUE(join(10, 0, 1).ok());
  EXPECT_EQ(of_cluster(), phase::training);
  st.on_disconnect(10, now);
  EXPECT_EQ(of_cluster(), phase::exiting);
}

// Heartbeats carry each worker's phase: the rows show it, and the cluster is
// as far as its furthest worker.
TEST_F(cluster_phase_test, rows_show_each_workers_phase_and_the_cluster_the_furthest) {
  join_all();
  EXPECT_EQ(annotated().workers(0).phase(), "");
  beat(1, phase::training);
  beat(2, phase::saving);
  auto status = annotated();
  EXPECT_EQ(status.workers(0).phase(), "training");
  EXPECT_EQ(status.workers(1).phase(), "saving");
  EXPECT_EQ(status.workers(2).phase(), "");
  EXPECT_EQ(of_cluster(), phase::saving);
  beat(3, phase::grace_countdown);
  EXPECT_EQ(of_cluster(), phase::grace_countdown);
  beat(2, phase::training);
  beat(3, phase::training);
  EXPECT_EQ(of_cluster(), phase::training);
  // A recorded notice counts before any heartbeat says so.
  request(4, insert(1, notice_key_prefix + std::string{"3"}, "notice"));
  EXPECT_EQ(of_cluster(), phase::notice_received);
  beat(4, phase::checkpoint_scheduled);
  EXPECT_EQ(of_cluster(), phase::checkpoint_scheduled);
}

// A status that names no phase (another protocol's, or a newer worker's)
// shows none and moves the cluster nowhere.
TEST_F(cluster_phase_test, a_status_naming_no_phase_shows_none) {
  join_all();
  wire::Envelope hb;
  hb.mutable_heartbeat()->set_status("hibernating");
  request(1, hb);
  EXPECT_EQ(annotated().workers(0).phase(), "");
  EXPECT_EQ(of_cluster(), phase::training);
}

// A coordinator has no checkpoint writer: its last checkpoint is the job's,
// from what the workers recorded; none before they did.
TEST_F(cluster_phase_test, the_last_checkpoint_is_the_jobs_from_the_workers_records) {
  join_all();
  EXPECT_EQ(annotated().last_checkpoint().path(), "");
  wire::CheckpointInfo info;
  info.set_step(40);
  info.set_path("/ck/step-40");
  info.set_bytes(1000);
  info.set_seconds(2);
  request(1, insert(1, checkpoint_record_key(40, 0), info.SerializeAsString()));
  info.set_seconds(3);
  request(2, insert(2, checkpoint_record_key(40, 1), info.SerializeAsString()));
  auto ckpt = annotated().last_checkpoint();
  EXPECT_EQ(ckpt.step(), 40);
  EXPECT_EQ(ckpt.path(), "/ck/step-40");
  EXPECT_EQ(ckpt.bytes(), 2000);
  EXPECT_EQ(ckpt.seconds(), 3);
}

}  // namespace
