#include "actors/coordination/coordination_service.hpp"

#include <atomic>
#include <random>
#include <thread>

#include <caf/scoped_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/coordination/coordination_auth.hpp"
#include "actors/coordination/coordination_frame.hpp"
#include "actors/coordination/coordination_state.hpp"
#include "actors/coordination/heartbeat_schedule.hpp"
#include "messages/status.pb.h"
#include "messages/wire.hpp"
#include "tests/actors/coordination/coordination_fixture.hpp"
#include "tests/support/actor_probe.hpp"
#include "tests/support/loopback_port.hpp"

using namespace lifeboat;
using namespace lifeboat::test;

namespace {

using service_test = service_fixture;

std::vector<wire::WorkerInfo> worker_table(caf::actor_system& sys, const caf::actor& service) {
  std::vector<wire::WorkerInfo> result;
  caf::scoped_actor self{sys};
  self->request(service, socket_deadline, workers_atom::value)
      .receive([&](std::vector<wire::WorkerInfo>& rows) { result = std::move(rows); },
               [&](caf::error& err) { ADD_FAILURE() << describe(err); });
  return result;
}

// The cluster still works and nobody was marked lost.
void expect_undisturbed(caf::actor_system& sys, const caf::actor& service, coordination_client& a,
                        coordination_client& b, const std::string& key) {
  ASSERT_FALSE(a.insert(key, "v"));
  auto value = b.get(key, socket_deadline);
  ASSERT_TRUE(value) << describe(value.error());
  EXPECT_EQ(*value, "v");
  auto rows = worker_table(sys, service);
  ASSERT_EQ(rows.size(), static_cast<size_t>(fixture_world_size));
  EXPECT_EQ(rows[0].state(), "alive");
  EXPECT_EQ(rows[1].state(), "alive");
}

// What a raw socket answers to the service's challenge to join as rank 0.
wire::Envelope join_as_rank_0(const wire::Hello& hello, uint32_t protocol_version) {
  wire::Envelope env;
  auto* j = env.mutable_join();
  j->set_protocol_version(protocol_version);
  j->set_rank(0);
  j->set_world_size(fixture_world_size);
  j->set_mac(join_mac(fixture_token, hello.nonce(), 0, fixture_world_size, 0));
  j->set_nonce(make_join_nonce());
  return env;
}

constexpr std::chrono::milliseconds short_join_bound{500};

TEST_F(service_test, a_connection_that_sends_nothing_is_closed_within_the_join_bound) {
  auto [bounded, bounded_port] = service_with_join_bound(sys, short_join_bound);
  raw_socket s{bounded_port};
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(s.read_frame()->has_hello());
  EXPECT_TRUE(s.closed_by_peer(short_join_bound + socket_deadline));
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GE(elapsed, short_join_bound - std::chrono::milliseconds(50));
  EXPECT_LT(elapsed, short_join_bound + std::chrono::seconds(1));
  caf::anon_send_exit(bounded, caf::exit_reason::user_shutdown);
}

// A flood of idle connections fills the unjoined slots and the rest are
// closed at accept; once the idle ones overstay the bound, workers join.
TEST_F(service_test, idle_connections_do_not_stop_workers_from_joining) {
  constexpr int idle_connections = 200;
  auto [bounded, bounded_port] = service_with_join_bound(sys, short_join_bound);
  std::vector<std::unique_ptr<raw_socket>> idle;
  for (int i = 0; i < idle_connections; ++i) {
    idle.push_back(std::make_unique<raw_socket>(bounded_port));
    ASSERT_TRUE(idle.back()->connected());
  }
  auto joined = [&, bounded_port = bounded_port](int rank) {
    auto cfg = agent_cfg(rank);
    cfg.port = bounded_port;
    cfg.join_timeout = std::chrono::seconds(10);
    return coordination_client::connect(sys, cfg);
  };
  auto a = joined(0);
  ASSERT_TRUE(a) << describe(a.error());
  auto b = joined(1);
  ASSERT_TRUE(b) << describe(b.error());
  std::thread other{[&] { EXPECT_FALSE((*b)->barrier("after/flood", socket_deadline, {0, 1})); }};
  EXPECT_FALSE((*a)->barrier("after/flood", socket_deadline, {0, 1}));
  other.join();
  for (auto& s : idle) EXPECT_TRUE(s->closed_by_peer());
  caf::anon_send_exit(bounded, caf::exit_reason::user_shutdown);
}

TEST_F(service_test, garbage_truncated_and_oversized_frames_do_not_disturb_the_cluster) {
  auto a = join(0);
  auto b = join(1);
  ASSERT_TRUE(a && b);
  {
    raw_socket s{port};
    ASSERT_TRUE(s.connected());
    ASSERT_TRUE(s.read_frame()->has_hello());
    std::mt19937 rng{42};
    std::string junk(512, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    // A small declared length makes the service parse the junk (and fail).
    junk[0] = junk[1] = junk[2] = 0;
    junk[3] = 100;
    s.write_all(junk.data(), junk.size());
    EXPECT_TRUE(s.closed_by_peer());
  }
  expect_undisturbed(sys, service, *a, *b, "after/garbage");
  {
    raw_socket s{port};
    const char oversized[4] = {'\x7f', '\xff', '\xff', '\xff'};
    s.write_all(oversized, sizeof(oversized));
    EXPECT_TRUE(s.closed_by_peer());
  }
  expect_undisturbed(sys, service, *a, *b, "after/oversized");
  {
    raw_socket s{port};
    const char truncated[6] = {0, 0, 0, 50, 1, 2};
    s.write_all(truncated, sizeof(truncated));
  }
  expect_undisturbed(sys, service, *a, *b, "after/truncated");
}

TEST_F(service_test, frames_that_arrive_together_are_handled_in_order) {
  raw_socket s{port};
  auto hello = s.read_frame();
  ASSERT_TRUE(hello && hello->has_hello());
  auto join = join_as_rank_0(hello->hello(), coordination_protocol_version);
  wire::Envelope insert;
  insert.mutable_insert()->set_id(1);
  insert.mutable_insert()->set_key("together");
  insert.mutable_insert()->set_value("v");
  wire::Envelope get;
  get.mutable_try_get()->set_id(2);
  get.mutable_try_get()->set_key("together");
  // One write: the join, then two requests that are only valid after it.
  std::string bytes;
  for (auto* env : {&join, &insert, &get}) {
    auto frame = encode_frame(*env);
    bytes.append(frame.begin(), frame.end());
  }
  ASSERT_TRUE(s.write_all(bytes.data(), bytes.size()));
  auto joined = s.read_frame();
  ASSERT_TRUE(joined && joined->has_join_reply());
  EXPECT_TRUE(joined->join_reply().ok()) << joined->join_reply().message();
  auto inserted = s.read_frame();
  ASSERT_TRUE(inserted && inserted->has_reply());
  EXPECT_EQ(inserted->reply().id(), 1u);
  EXPECT_EQ(inserted->reply().error_code(), 0u) << inserted->reply().error_message();
  auto found = s.read_frame();
  ASSERT_TRUE(found && found->has_reply());
  EXPECT_EQ(found->reply().id(), 2u);
  EXPECT_TRUE(found->reply().found());
  EXPECT_EQ(found->reply().value(), "v");
}

TEST_F(service_test, requests_before_a_join_close_the_connection) {
  raw_socket s{port};
  ASSERT_TRUE(s.read_frame()->has_hello());
  wire::Envelope env;
  env.mutable_insert()->set_id(1);
  env.mutable_insert()->set_key("sneaky");
  env.mutable_insert()->set_value("v");
  s.write_frame(env);
  EXPECT_TRUE(s.closed_by_peer());
  auto a = join(0);
  ASSERT_TRUE(a);
  auto value = a->try_get("sneaky");
  ASSERT_TRUE(value);
  EXPECT_FALSE(*value);
}

// An external coordinator's timeout may be shorter than the workers' own
// (lifeboat-coordinator --heartbeat-timeout-ms): its join reply asks for
// heartbeats often enough, and a worker that would send one every four of
// the service's timeouts stays alive.
TEST_F(service_test, a_worker_heartbeats_as_often_as_its_service_asks) {
  auto cfg = agent_cfg(0);
  cfg.heartbeat_interval = 4 * fixture_heartbeat_timeout;
  testing::internal::CaptureStderr();
  auto client = coordination_client::connect(sys, cfg);
  ASSERT_TRUE(client) << describe(client.error());
  // Long enough for the service to lose a worker that heartbeats too rarely.
  std::this_thread::sleep_for(2 * fixture_heartbeat_timeout);
  auto said = testing::internal::GetCapturedStderr();
  auto rows = worker_table(sys, service);
  ASSERT_EQ(rows.size(), static_cast<size_t>(fixture_world_size));
  EXPECT_EQ(rows[0].state(), "alive") << said;
  EXPECT_NE(said.find("the coordination service needs a heartbeat every " +
                      std::to_string(fixture_heartbeat_timeout.count() / 4) + " ms, not every " +
                      std::to_string(cfg.heartbeat_interval.count()) + " ms"),
            std::string::npos)
      << said;
  EXPECT_FALSE((*client)->leave());
}

// A worker that saves and exits within one heartbeat interval leaves its
// row with what it last did, not with the periodic heartbeat before that
// (operators read a saved job's rows: "training" at an older step before).
TEST_F(service_test, a_rank_that_leaves_is_listed_with_its_last_step_and_status) {
  service_config scfg;
  scfg.world_size = fixture_world_size;
  scfg.token = fixture_token;
  scfg.heartbeat_timeout = fixture_heartbeat_timeout;
  // As a coordinator shows it: the status a rank last reported as its phase.
  scfg.annotate_status = [](const coordination_state& state, wire::ActorStatus& st) {
    for (auto& w : *st.mutable_workers()) w.set_phase(state.reported_status(w.rank()));
  };
  auto spawned = spawn_coordination_service(sys, scfg);
  ASSERT_TRUE(spawned) << describe(spawned.error());
  auto [annotated, annotated_port] = *spawned;
  std::atomic<int64_t> step{5};
  std::atomic<bool> exiting{false};
  auto cfg = agent_cfg(0);
  cfg.port = annotated_port;
  cfg.step_source = [&] { return step.load(); };
  cfg.status_source = [&] { return std::string{exiting ? "exiting" : "training"}; };
  auto client = coordination_client::connect(sys, cfg);
  ASSERT_TRUE(client) << describe(client.error());
  caf::scoped_actor self{sys};
  auto row = [&] { return status_of(self, annotated, socket_deadline).workers(0); };
  // A heartbeat's step and status, not the join's.
  auto until = std::chrono::steady_clock::now() + socket_deadline;
  while (row().phase() != "training" && std::chrono::steady_clock::now() < until) {
  }
  ASSERT_EQ(row().step(), 5);
  step = 9;
  exiting = true;
  ASSERT_FALSE((*client)->leave());
  EXPECT_EQ(row().state(), "left");
  EXPECT_EQ(row().step(), 9);
  EXPECT_EQ(row().phase(), "exiting");
  caf::anon_send_exit(annotated, caf::exit_reason::user_shutdown);
}

// A heartbeat timeout of a few ms would lose every worker at once.
TEST(service_spawn, a_heartbeat_timeout_below_the_floor_is_refused) {
  system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  service_config cfg;
  cfg.world_size = 1;
  cfg.heartbeat_timeout = min_heartbeat_timeout - std::chrono::milliseconds{1};
  auto spawned = spawn_coordination_service(sys, cfg);
  ASSERT_FALSE(spawned);
  EXPECT_EQ(describe(spawned.error()),
            "invalid_config: coordination service: heartbeat timeout must be at least 100 ms, "
            "not 99 ms");
  cfg.heartbeat_timeout = min_heartbeat_timeout;
  auto at_floor = spawn_coordination_service(sys, cfg);
  ASSERT_TRUE(at_floor) << describe(at_floor.error());
  // An answer from the running service; one ended before it ever ran is
  // what CAF 0.17 sometimes never frees (LeakSanitizer under make test-asan).
  EXPECT_EQ(worker_table(sys, at_floor->first).size(), 1u);
  caf::anon_send_exit(at_floor->first, caf::exit_reason::user_shutdown);
}

// CAF's own error ("tcp socket creation failed") does not say why.
TEST(service_spawn, a_port_in_use_is_named_with_the_reason) {
  system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  held_port taken;
  ASSERT_NE(taken.port(), 0);
  service_config cfg;
  cfg.port = taken.port();
  auto spawned = spawn_coordination_service(sys, cfg);
  ASSERT_FALSE(spawned);
  EXPECT_EQ(describe(spawned.error()),
            "unavailable: coordination service: cannot listen on 127.0.0.1:" +
                std::to_string(taken.port()) + ": Address already in use");
}

TEST_F(service_test, wrong_token_is_refused_with_a_clear_message) {
  auto cfg = agent_cfg(0);
  cfg.token = "wrong";
  auto client = coordination_client::connect(sys, cfg);
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error(), make_error(errc::refused));
  EXPECT_NE(describe(client.error()).find("token"), std::string::npos);
  EXPECT_EQ(worker_table(sys, service)[0].state(), "joining");
}

TEST_F(service_test, wrong_world_size_and_duplicate_rank_are_refused) {
  auto cfg = agent_cfg(0);
  cfg.world_size = fixture_world_size + 1;
  auto bad = coordination_client::connect(sys, cfg);
  ASSERT_FALSE(bad);
  EXPECT_NE(describe(bad.error()).find("world size"), std::string::npos);
  auto a = join(0);
  ASSERT_TRUE(a);
  auto dup = coordination_client::connect(sys, agent_cfg(0));
  ASSERT_FALSE(dup);
  EXPECT_NE(describe(dup.error()).find("already joined"), std::string::npos);
  ASSERT_FALSE(a->insert("still", "here"));
}

TEST_F(service_test, bad_protocol_version_names_both_versions) {
  raw_socket s{port};
  auto hello = s.read_frame();
  ASSERT_TRUE(hello && hello->has_hello());
  s.write_frame(join_as_rank_0(hello->hello(), coordination_protocol_version + 7));
  auto reply = s.read_frame();
  ASSERT_TRUE(reply && reply->has_join_reply());
  EXPECT_FALSE(reply->join_reply().ok());
  auto& msg = reply->join_reply().message();
  EXPECT_NE(msg.find(std::to_string(coordination_protocol_version + 7)), std::string::npos);
  EXPECT_NE(msg.find(std::to_string(coordination_protocol_version)), std::string::npos);
  EXPECT_TRUE(s.closed_by_peer());
}

TEST_F(service_test, stale_incarnation_is_refused_after_a_new_generation) {
  auto fresh = join(1, 1);
  ASSERT_TRUE(fresh);
  auto stale = coordination_client::connect(sys, agent_cfg(0, 0));
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error(), make_error(errc::refused));
  EXPECT_NE(describe(stale.error()).find("stale incarnation"), std::string::npos);
}

TEST_F(service_test, local_interface_reports_workers_snapshot_events_and_status) {
  caf::scoped_actor self{sys};
  self->send(service, subscribe_atom::value, caf::actor{self});
  auto a = join(2);
  ASSERT_TRUE(a);
  self->receive([](const membership_event& ev) {
    EXPECT_EQ(ev.rank, 2);
    EXPECT_EQ(ev.kind, membership_event::joined);
  });
  ASSERT_FALSE(a->insert("snap/x", "1"));
  self->request(service, socket_deadline, snapshot_atom::value, std::string{"snap/"})
      .receive(
          [](const std::map<std::string, std::string>& kv) {
            EXPECT_EQ(kv, (std::map<std::string, std::string>{{"snap/x", "1"}}));
          },
          [](caf::error& err) { ADD_FAILURE() << describe(err); });
  auto st = status_of(self, service, socket_deadline);
  EXPECT_EQ(st.name(), "coordination_service");
  ASSERT_EQ(st.workers_size(), fixture_world_size);
  EXPECT_EQ(st.workers(2).state(), "alive");
  ASSERT_FALSE(a->leave());
  self->receive([](const membership_event& ev) {
    EXPECT_EQ(ev.rank, 2);
    EXPECT_EQ(ev.kind, membership_event::left);
  });
  EXPECT_EQ(worker_table(sys, service)[2].state(), "left");
  self->send(service, reset_atom::value);
  EXPECT_EQ(worker_table(sys, service)[2].state(), "joining");
}

}  // namespace
