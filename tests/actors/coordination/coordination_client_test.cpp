#include "actors/coordination/coordination_client.hpp"

#include <functional>
#include <thread>

#include "actors/coordination/coordination_auth.hpp"
#include "actors/coordination/coordination_frame.hpp"
#include "messages/utf8.hpp"
#include "tests/actors/coordination/coordination_fixture.hpp"
#include "tests/support/actor_probe.hpp"
#include "tests/support/loopback_port.hpp"

using namespace lifeboat;
using namespace lifeboat::test;

namespace {

using client_test = service_fixture;

constexpr std::chrono::milliseconds short_timeout{100};

// A peer playing the service's part: takes one connection on `listener` and
// writes `bytes` to it; returns the connection (-1 when none came).
int accept_and_send(int listener, const std::string& bytes) {
  int conn = ::accept(listener, nullptr, nullptr);
  if (conn >= 0) [[maybe_unused]]
    auto written = ::write(conn, bytes.data(), bytes.size());
  return conn;
}

// The next frame on a blocking socket, or nullopt when it closed first.
std::optional<wire::Envelope> read_frame_from(int fd, frame_splitter& split) {
  wire::Envelope env;
  char buf[4096];
  while (split.next(env) != frame_splitter::status::frame) {
    auto n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return std::nullopt;
    split.append(buf, static_cast<size_t>(n));
  }
  return env;
}

void write_frame_to(int fd, const wire::Envelope& env) {
  auto bytes = encode_frame(env);
  [[maybe_unused]] auto written = ::write(fd, bytes.data(), bytes.size());
}

// A peer playing the service's part up to the join: takes one connection on
// `listener`, bounds its reads by 5 s (an agent that wrongly keeps the
// connection open must not hang the test), greets, reads the JoinRequest and
// says ok with proof(request) as its proof (none when empty). Returns the
// connection, or -1 when no connection or no join came.
int answer_join(int listener, frame_splitter& split,
                const std::function<std::string(const wire::JoinRequest&)>& proof) {
  int conn = ::accept(listener, nullptr, nullptr);
  if (conn < 0) return conn;
  timeval bound{5, 0};
  ::setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
  wire::Envelope hello;
  hello.mutable_hello()->set_protocol_version(coordination_protocol_version);
  hello.mutable_hello()->set_nonce(make_join_nonce());
  write_frame_to(conn, hello);
  auto join = read_frame_from(conn, split);
  if (!join) {
    ::close(conn);
    return -1;
  }
  wire::Envelope reply;
  reply.mutable_join_reply()->set_ok(true);
  if (auto p = proof(join->join()); !p.empty()) reply.mutable_join_reply()->set_proof(p);
  write_frame_to(conn, reply);
  return conn;
}

// What an impostor at the service's address puts in its JoinReply's proof.
enum class impostor_proof { missing, random, reflected_worker_mac };

TEST_F(client_test, kv_operations) {
  auto a = join(0);
  auto b = join(1);
  ASSERT_TRUE(a && b);
  ASSERT_FALSE(a->insert("ckpt//step/1/", "x"));
  EXPECT_EQ(a->insert("ckpt/step/1", "y"), make_error(errc::already_exists));
  auto v = b->try_get("ckpt/step/1");
  ASSERT_TRUE(v && *v);
  EXPECT_EQ(**v, "x");
  ASSERT_FALSE(a->insert("ckpt/step/2", "z"));
  auto all = b->get_prefix("ckpt/");
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), 2u);
  ASSERT_FALSE(b->erase_prefix("ckpt/step"));
  auto none = a->try_get("ckpt/step/2");
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
}

// A frame over the limit makes the service close the connection: the
// request fails at once instead, and the worker stays joined.
TEST_F(client_test, a_request_larger_than_a_frame_fails_and_the_worker_stays) {
  auto a = join(0);
  ASSERT_TRUE(a);
  auto err = a->insert("big", std::string(max_frame_bytes, 'x'));
  EXPECT_EQ(err, make_error(errc::invalid_argument));
  EXPECT_NE(describe(err).find("over the coordination frame limit of 4194304 bytes"),
            std::string::npos)
      << describe(err);
  EXPECT_FALSE(a->insert("small", "x"));
}

// A step's exception may carry megabytes, and bytes that are not UTF-8 (a
// protobuf string the service could not parse): the report reaches every
// peer cut and mended, and its sender is failed, not lost with its message.
TEST_F(client_test, a_huge_error_that_is_not_utf8_reaches_the_peers_cut_and_readable) {
  auto a = join(0);
  auto b = join(1);
  ASSERT_TRUE(a && b);
  caf::scoped_actor self{sys};
  b->subscribe(self);
  auto head = std::string{"step 5 raised caf\xE9: "};
  a->report_error(7, head + std::string(5 * 1024 * 1024, 'x'));
  self->receive(
      [&](const peer_failure& f) {
        EXPECT_EQ(f.rank, 0);
        EXPECT_EQ(f.code, 7);
        EXPECT_FALSE(f.lost);
        EXPECT_TRUE(is_utf8(f.message));
        EXPECT_EQ(f.message.rfind("step 5 raised caf\xEF\xBF\xBD: xxx", 0), 0u);
        EXPECT_LE(f.message.size(), max_error_message_bytes + 64);
        EXPECT_NE(f.message.find(" more bytes)"), std::string::npos);
      },
      caf::after(socket_deadline) >> [] { ADD_FAILURE() << "no failure reached rank 1"; });
}

TEST_F(client_test, blocking_get_times_out) {
  auto a = join(0);
  ASSERT_TRUE(a);
  auto start = std::chrono::steady_clock::now();
  auto v = a->get("never", short_timeout);
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error(), make_error(errc::timeout));
  EXPECT_GE(std::chrono::steady_clock::now() - start, short_timeout);
}

TEST_F(client_test, cancelled_get_completes_with_cancelled) {
  auto a = join(0);
  ASSERT_TRUE(a);
  auto handle = a->get_async("never", std::chrono::seconds(30));
  ASSERT_TRUE(handle);
  std::thread canceller{[&] { a->cancel(*handle); }};
  auto v = a->wait(*handle);
  canceller.join();
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error(), make_error(errc::cancelled));
}

TEST_F(client_test, blocking_get_returns_when_another_rank_inserts) {
  auto a = join(0);
  auto b = join(1);
  ASSERT_TRUE(a && b);
  auto handle = a->get_async("later", std::chrono::seconds(5));
  ASSERT_TRUE(handle);
  ASSERT_FALSE(b->insert("later", "now"));
  auto v = a->wait(*handle);
  ASSERT_TRUE(v) << describe(v.error());
  EXPECT_EQ(*v, "now");
}

TEST_F(client_test, barrier_times_out_when_a_participant_never_arrives) {
  auto a = join(0);
  ASSERT_TRUE(a);
  auto err = a->barrier("lonely", short_timeout, {0, 1});
  EXPECT_EQ(err, make_error(errc::timeout));
}

// absent_at_timeout::hung reaches the service: the rank that did not come
// is hung, the barrier fails with that failure, and every rank, the hung one
// included, hears it as the absent rank's failure.
TEST_F(client_test, a_barrier_with_absent_hung_names_the_rank_that_never_arrived_as_hung) {
  auto a = join(0);
  auto b = join(1);
  ASSERT_TRUE(a && b);
  caf::scoped_actor self{sys};
  b->subscribe(self);
  auto err =
      a->barrier("save", short_timeout, {0, 1}, coordination_client::absent_at_timeout::hung);
  ASSERT_TRUE(err);
  EXPECT_EQ(err.code(), static_cast<uint8_t>(errc::peer_error));
  EXPECT_NE(describe(err).find("rank 1 failed: hang: did not arrive at barrier save"),
            std::string::npos)
      << describe(err);
  self->receive(
      [&](const peer_failure& f) {
        EXPECT_EQ(f.rank, 1);
        EXPECT_EQ(f.code, static_cast<int32_t>(errc::hung));
        EXPECT_FALSE(f.lost);
      },
      caf::after(socket_deadline) >> [] { ADD_FAILURE() << "no failure reached rank 1"; });
}

TEST_F(client_test, blocking_calls_fail_fast_when_the_service_is_gone) {
  auto a = join(0);
  ASSERT_TRUE(a);
  caf::scoped_actor self{sys};
  a->subscribe(self);
  auto handle = a->get_async("never", std::chrono::seconds(30));
  ASSERT_TRUE(handle);
  caf::anon_send_exit(service, caf::exit_reason::user_shutdown);
  auto start = std::chrono::steady_clock::now();
  auto v = a->wait(*handle);
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error(), make_error(errc::unavailable));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  self->receive([](const peer_failure& f) {
    EXPECT_EQ(f.rank, -1);
    EXPECT_TRUE(f.lost);
    EXPECT_EQ(f.message, "coordination service lost: connection closed");
  });
  EXPECT_TRUE(a->barrier("b", short_timeout));
}

// Where rank 0's process hosts the service, the service goes when rank 0
// does: the others' failure names rank 0, which the exit line must.
TEST_F(client_test, a_lost_service_that_a_rank_hosted_is_that_ranks_loss) {
  auto cfg = agent_cfg(1);
  cfg.service_rank = 0;
  auto b = coordination_client::connect(sys, cfg);
  ASSERT_TRUE(b) << describe(b.error());
  caf::scoped_actor self{sys};
  (*b)->subscribe(self);
  caf::anon_send_exit(service, caf::exit_reason::user_shutdown);
  self->receive(
      [](const peer_failure& f) {
        EXPECT_EQ(f.rank, 0);
        EXPECT_EQ(f.code, static_cast<int32_t>(errc::peer_lost));
        EXPECT_TRUE(f.lost);
        EXPECT_EQ(f.message, "its coordination service is gone: connection closed");
      },
      caf::after(wait_bound) >> [] { FAIL() << "no failure after the service ended"; });
  EXPECT_EQ((*b)->insert("k", "v"), make_error(errc::unavailable));
}

TEST_F(client_test, calls_fail_at_once_when_the_agent_has_ended) {
  auto cfg = agent_cfg(0);
  // A call that waited for the ended agent would come back after this with
  // errc::timeout instead of errc::unavailable.
  cfg.request_timeout = std::chrono::seconds(10);
  auto client = coordination_client::connect(sys, cfg);
  ASSERT_TRUE(client) << describe(client.error());
  auto agent = (*client)->agent();
  caf::scoped_actor self{sys};
  self->monitor(agent);
  caf::anon_send_exit(agent, caf::exit_reason::kill);
  self->receive([](const caf::down_msg&) {},
                caf::after(wait_bound) >> [] { FAIL() << "the agent did not end"; });
  EXPECT_EQ((*client)->insert("k", "v"), make_error(errc::unavailable));
  EXPECT_EQ((*client)->leave(), make_error(errc::unavailable));
}

TEST_F(client_test, join_times_out_when_nobody_listens) {
  auto cfg = agent_cfg(0);
  cfg.port = 1;  // privileged and unused: connections are refused
  cfg.join_timeout = std::chrono::milliseconds(300);
  auto start = std::chrono::steady_clock::now();
  auto client = coordination_client::connect(sys, cfg);
  ASSERT_FALSE(client);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_NE(describe(client.error()).find("coordination service"), std::string::npos);
}

// Another job's server on the service's port: it accepts (here the kernel
// does, into the listen backlog) but never greets. The join fails at the
// handshake bound, naming the stranger, not at the join timeout.
TEST_F(client_test, join_fails_at_once_when_the_peer_never_greets) {
  held_port stranger;
  auto cfg = agent_cfg(0);
  cfg.port = stranger.port();
  cfg.handshake_timeout = std::chrono::milliseconds(200);
  auto start = std::chrono::steady_clock::now();
  auto client = coordination_client::connect(sys, cfg);
  ASSERT_FALSE(client);
  EXPECT_LT(std::chrono::steady_clock::now() - start, cfg.join_timeout / 2);
  EXPECT_EQ(client.error().code(), static_cast<uint8_t>(errc::refused));
  EXPECT_NE(describe(client.error()).find("is not a lifeboat coordination service"),
            std::string::npos)
      << describe(client.error());
}

// A stranger that answers with what is no frame of the protocol (an HTTP
// server): the join fails at once instead of reconnecting until the timeout.
TEST_F(client_test, join_fails_at_once_when_the_peer_speaks_another_protocol) {
  held_port stranger;
  std::thread server{[fd = stranger.fd()] {
    int conn = accept_and_send(fd, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    if (conn < 0) return;
    char byte = 0;
    // Keeps the connection open until the agent closes it.
    [[maybe_unused]] auto read = ::read(conn, &byte, 1);
    ::close(conn);
  }};
  auto cfg = agent_cfg(0);
  cfg.port = stranger.port();
  auto start = std::chrono::steady_clock::now();
  auto client = coordination_client::connect(sys, cfg);
  server.join();
  ASSERT_FALSE(client);
  EXPECT_LT(std::chrono::steady_clock::now() - start, cfg.handshake_timeout);
  EXPECT_NE(describe(client.error()).find("no frame of the protocol"), std::string::npos)
      << describe(client.error());
}

// A service that greets and then goes away (its host died during the start)
// is lost: the join gives up after the rejoin bound, not the join timeout,
// and says the service was lost.
TEST_F(client_test, a_service_gone_after_its_greeting_is_lost_within_the_rejoin_bound) {
  held_port listener;
  std::thread service{[fd = listener.fd()] {
    wire::Envelope hello;
    hello.mutable_hello()->set_protocol_version(coordination_protocol_version);
    hello.mutable_hello()->set_nonce("nonce");
    auto bytes = encode_frame(hello);
    int conn = accept_and_send(fd, {bytes.begin(), bytes.end()});
    if (conn < 0) return;
    // The service goes away: it stops listening before its connection
    // closes, so the agent's next attempt is refused.
    ::shutdown(fd, SHUT_RDWR);
    ::close(conn);
  }};
  auto cfg = agent_cfg(0);
  cfg.port = listener.port();
  cfg.rejoin_bound = std::chrono::milliseconds(300);
  std::optional<caf::expected<std::unique_ptr<coordination_client>>> client;
  std::thread joining{[&] { client.emplace(coordination_client::connect(sys, cfg)); }};
  service.join();
  auto start = std::chrono::steady_clock::now();
  joining.join();
  ASSERT_TRUE(client && !*client);
  EXPECT_LT(std::chrono::steady_clock::now() - start, cfg.join_timeout / 2);
  EXPECT_EQ(client->error(), make_error(errc::peer_lost)) << describe(client->error());
  EXPECT_NE(describe(client->error()).find("lost the coordination service"), std::string::npos);
}

// A service that accepts the join and then falls silent, as one behind a
// network partition does (the connection stays open, nothing arrives): the
// agent reports it lost after service_silence_bound and closes the connection,
// and a blocking call fails at once instead of waiting out its timeout.
TEST_F(client_test, a_service_that_falls_silent_after_the_join_is_lost) {
  held_port listener;
  bool closed_by_agent = false;
  std::thread service{[fd = listener.fd(), &closed_by_agent] {
    frame_splitter split;
    int conn = answer_join(fd, split, [](const wire::JoinRequest& join) {
      return service_proof(fixture_token, join.nonce(), join.rank(), join.world_size(), 0);
    });
    if (conn < 0) return;
    // Heartbeats come in and are never answered, until the agent hangs up.
    while (read_frame_from(conn, split)) {
    }
    // End of file, not the bounded read's timeout.
    char byte = 0;
    closed_by_agent = ::recv(conn, &byte, 1, MSG_DONTWAIT) == 0;
    ::close(conn);
  }};
  auto cfg = agent_cfg(0);
  cfg.port = listener.port();
  cfg.service_silence_bound = std::chrono::milliseconds(300);
  auto client = coordination_client::connect(sys, cfg);
  ASSERT_TRUE(client) << describe(client.error());
  auto start = std::chrono::steady_clock::now();
  auto v = (*client)->get("never", std::chrono::seconds(30));
  service.join();
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error(), make_error(errc::unavailable)) << describe(v.error());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(closed_by_agent);
}

// The real service answers every heartbeat: a joined agent with a short
// silence bound stays joined for three times that bound. The bound is ten
// heartbeat intervals: with three, a tick late by two intervals under
// ThreadSanitizer beside other tests once lost the service (silent 320 ms).
TEST_F(client_test, the_service_answers_heartbeats_so_a_quiet_job_is_not_lost) {
  auto cfg = agent_cfg(0);
  cfg.service_silence_bound = 10 * fixture_heartbeat_interval;
  auto client = coordination_client::connect(sys, cfg);
  ASSERT_TRUE(client) << describe(client.error());
  auto v = (*client)->get("never", 3 * cfg.service_silence_bound);
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error(), make_error(errc::timeout)) << describe(v.error());
}

// Something at the service's address that speaks the protocol and says ok to
// every join, but does not know the token: the worker must not follow it.
TEST_F(client_test, join_is_refused_when_the_service_cannot_prove_the_token) {
  for (auto kind :
       {impostor_proof::missing, impostor_proof::random, impostor_proof::reflected_worker_mac}) {
    held_port impostor;
    std::thread server{[fd = impostor.fd(), kind] {
      frame_splitter split;
      int conn = answer_join(fd, split, [kind](const wire::JoinRequest& join) {
        if (kind == impostor_proof::random) return make_join_nonce();
        if (kind == impostor_proof::reflected_worker_mac) return join.mac();
        return std::string{};
      });
      if (conn < 0) return;
      // Keeps the connection open until the agent closes it.
      read_frame_from(conn, split);
      ::close(conn);
    }};
    auto cfg = agent_cfg(0);
    cfg.port = impostor.port();
    auto start = std::chrono::steady_clock::now();
    auto client = coordination_client::connect(sys, cfg);
    server.join();
    ASSERT_FALSE(client) << "impostor kind " << static_cast<int>(kind);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
    EXPECT_EQ(client.error().code(), static_cast<uint8_t>(errc::refused));
    EXPECT_NE(describe(client.error()).find("could not prove it knows the cluster token"),
              std::string::npos)
        << describe(client.error());
  }
}

TEST_F(client_test, leave_is_idempotent) {
  auto a = join(0);
  ASSERT_TRUE(a);
  EXPECT_FALSE(a->leave());
  EXPECT_FALSE(a->leave());
}

}  // namespace
