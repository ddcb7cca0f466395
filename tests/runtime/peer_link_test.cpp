// peer_link: both ends prove that they hold the token before either trusts
// the other, messages and files cross whole, and a listener of another job,
// a connector of another job and an oversized message are clear errors.
#include "runtime/peer_link.hpp"

#include <signal.h>
#include <sys/socket.h>

#include <filesystem>
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "messages/checkpoint.pb.h"
#include "messages/errors.hpp"
#include "tests/checkpoint/test_support.hpp"
#include "tests/support/loopback_port.hpp"

namespace lifeboat {
namespace {

using checkpoint::testing::temp_dir;

constexpr const char* token = "peer-link-test-token";

// The listener's end of the next connection to `port`, with `secret`.
std::future<caf::expected<peer_link>> accept_next(const test::held_port& port, std::string secret) {
  return std::async(std::launch::async, [fd = port.fd(), secret] {
    return peer_link::accept(::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC), secret);
  });
}

TEST(peer_link_test, both_ends_prove_the_token_and_exchange_messages_and_files) {
  test::held_port l;
  auto accepted = accept_next(l, token);
  auto client = peer_link::connect("127.0.0.1", l.port(), token);
  ASSERT_TRUE(client) << describe(client.error());
  auto server = accepted.get();
  ASSERT_TRUE(server) << describe(server.error());
  EXPECT_TRUE(server->verify_proof(client->proof()));

  wire::ReplicaReply sent;
  sent.set_step(42);
  sent.set_error("none");
  ASSERT_FALSE(client->send(sent));
  wire::ReplicaReply received;
  ASSERT_FALSE(server->receive(received));
  EXPECT_EQ(received.step(), 42);
  EXPECT_EQ(received.error(), "none");

  temp_dir dir;
  auto bytes = checkpoint::testing::pattern(3 * 1024 * 1024 + 17, 7);
  checkpoint::testing::write_file(dir.sub("from"), std::string{bytes.begin(), bytes.end()});
  std::thread sender{[&] { EXPECT_FALSE(client->send_file(dir.sub("from"), bytes.size())); }};
  auto err = server->receive_file(*checkpoint::posix_file_system(), dir.sub("to"), bytes.size());
  sender.join();
  ASSERT_FALSE(err) << describe(err);
  EXPECT_EQ(checkpoint::testing::read_file(dir.sub("to")), std::string(bytes.begin(), bytes.end()));
}

TEST(peer_link_test, a_listener_of_another_job_is_refused) {
  test::held_port l;
  auto accepted = accept_next(l, "another job's token");
  auto client = peer_link::connect("127.0.0.1", l.port(), token);
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error(), make_error(errc::refused));
  EXPECT_NE(describe(client.error()).find("LIFEBOAT_CLUSTER_TOKEN"), std::string::npos)
      << describe(client.error());
  accepted.get();
}

TEST(peer_link_test, a_connector_of_another_job_does_not_prove_itself) {
  test::held_port l;
  auto accepted = accept_next(l, "another job's token");
  auto client = peer_link::connect("127.0.0.1", l.port(), "another job's token");
  ASSERT_TRUE(client);
  auto server = accepted.get();
  ASSERT_TRUE(server);
  // The same exchange under the listener's token, but this job's proof.
  EXPECT_FALSE(server->verify_proof(client->proof() + "x"));
  EXPECT_FALSE(server->verify_proof(""));
  EXPECT_TRUE(server->verify_proof(client->proof()));
}

TEST(peer_link_test, an_oversized_message_is_refused_before_it_is_read) {
  test::held_port l;
  auto accepted = accept_next(l, token);
  auto client = peer_link::connect("127.0.0.1", l.port(), token);
  ASSERT_TRUE(client);
  auto server = accepted.get();
  ASSERT_TRUE(server);
  wire::ReplicaReply big;
  big.set_error(std::string(peer_link_max_message + 1, 'x'));
  std::thread sender{[&] { EXPECT_FALSE(client->send(big)); }};
  wire::ReplicaReply received;
  auto err = server->receive(received);
  EXPECT_EQ(err, make_error(errc::invalid_argument));
  EXPECT_NE(describe(err).find("at most"), std::string::npos) << describe(err);
  // The whole message fits in the socket's buffer: the send has ended.
  sender.join();
}

// Without TLS a file goes out with sendfile(2), which raises SIGPIPE on a
// connection the peer closed: the default action would end this process.
TEST(peer_link_test, a_peer_gone_in_the_middle_of_a_file_is_an_error_not_a_sigpipe) {
  auto* before = ::signal(SIGPIPE, SIG_DFL);
  test::held_port l;
  auto accepted = accept_next(l, token);
  auto client = peer_link::connect("127.0.0.1", l.port(), token);
  ASSERT_TRUE(client);
  accepted.get();  // the listener's end, closed at once
  temp_dir dir;
  // Far more than the sockets' buffers hold.
  checkpoint::testing::write_file(dir.sub("from"), std::string(64 << 20, 'x'));
  caf::error err;
  bool pipe_blocked_after = true;
  std::thread sender{[&] {
    err = client->send_file(dir.sub("from"), 64 << 20);
    sigset_t mask;
    ::pthread_sigmask(SIG_SETMASK, nullptr, &mask);
    pipe_blocked_after = sigismember(&mask, SIGPIPE) == 1;
  }};
  sender.join();
  ::signal(SIGPIPE, before);
  EXPECT_EQ(err, make_error(errc::io_error)) << describe(err);
  EXPECT_NE(describe(err).find("sendfile"), std::string::npos) << describe(err);
  EXPECT_FALSE(pipe_blocked_after);
}

TEST(peer_link_test, nothing_listening_is_an_io_error) {
  auto client = peer_link::connect("127.0.0.1", test::unused_port(), token);
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error(), make_error(errc::io_error));
}

}  // namespace
}  // namespace lifeboat
