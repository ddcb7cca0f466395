// The launchers' control channel (node_link) between two ends in this
// process: node 0 accepts on a thread, node 1 connects, through a recording
// proxy on 127.0.0.1 where the test needs to see or alter the bytes. With
// TLS, nothing of the channel crosses in clear text and an altered byte
// fails the link; a TLS setting that differs between the two ends is a clear
// error within the handshake bound, never a link.
#include "apps/node_link.hpp"

#include <poll.h>
#include <unistd.h>

#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "actors/coordination/tls_context.hpp"
#include "tests/actors/coordination/tcp_proxy.hpp"
#include "tests/actors/coordination/tls_certificates.hpp"

using namespace lifeboat;
using namespace lifeboat::apps;

namespace {

using namespace std::chrono_literals;

const std::string token = "node-link-test-token";
constexpr int nnodes = 2;
const job_shape shape{nnodes, 4, 42};
constexpr auto accept_bound = 8s;
// Longer than node_link's handshake bound (5 s): a refusal must come first.
constexpr auto connect_bound = 7s;
constexpr auto handshake_bound = 5s;
// How long node 0 goes on accepting in the tests where no launcher joins.
constexpr auto refusal_accept_bound = 6s;
constexpr auto quick_refusal_accept_bound = 1s;
const std::string secret_line = "exited 3 rank 5 secret-7f3a9c";

using accepted = std::variant<std::vector<link_ptr>, std::string>;
using connected = std::variant<link_ptr, std::string>;

std::shared_ptr<tls_context> psk_context(tls_role role, const std::string& key_token = token) {
  tls_config cfg;
  cfg.enabled = true;
  auto made = tls_context::make(cfg, key_token, role);
  return made ? *made : nullptr;
}

// Node 0's side, accepting on a thread until one launcher joined or the bound.
class node_zero {
 public:
  explicit node_zero(std::shared_ptr<tls_context> tls, link_clock::duration bound = accept_bound) {
    std::string error;
    listener_ = node_listener::listen("127.0.0.1", 0, error);
    if (!listener_) return;
    result_ = std::async(std::launch::async, [this, tls, bound] {
      return listener_->accept_nodes(token, shape, node_wait{link_clock::now() + bound}, tls);
    });
  }

  uint16_t port() const { return listener_ ? listener_->port() : 0; }

  accepted result() { return result_.get(); }

 private:
  std::unique_ptr<node_listener> listener_;
  std::future<accepted> result_;
};

connected connect(uint16_t port, const std::shared_ptr<tls_context>& tls,
                  const std::string& key_token = token, const job_shape& node_shape = shape) {
  return connect_to_node_zero(
      "127.0.0.1", port, key_token, 1, node_shape, node_wait{link_clock::now() + connect_bound},
      [] {}, tls);
}

// Reads from `link` until a line arrives or the bound passes.
std::vector<std::string> lines_from(node_link& link) {
  std::vector<std::string> lines;
  std::string line;
  if (link.read_line(line, link_clock::now() + 5s)) lines.push_back(line);
  link.receive(lines);
  return lines;
}

struct joined_pair {
  link_ptr zero;  // node 0's link to node 1
  link_ptr one;   // node 1's link to node 0
};

// Links node 1 to node 0 through `proxy` (or directly with null).
joined_pair join(node_zero& zero, test::tcp_proxy* proxy,
                 const std::shared_ptr<tls_context>& client_tls) {
  auto one = connect(proxy ? proxy->port() : zero.port(), client_tls);
  auto links = zero.result();
  joined_pair out;
  if (auto* l = std::get_if<link_ptr>(&one)) out.one = std::move(*l);
  if (auto* v = std::get_if<std::vector<link_ptr>>(&links)) out.zero = std::move((*v)[1]);
  EXPECT_TRUE(out.one) << std::get<std::string>(one);
  EXPECT_TRUE(out.zero) << std::get<std::string>(links);
  return out;
}

TEST(node_link_test, clear_text_links_carry_lines_both_ways) {
  node_zero zero{nullptr};
  ASSERT_NE(zero.port(), 0);
  auto pair = join(zero, nullptr, nullptr);
  ASSERT_TRUE(pair.zero && pair.one);
  EXPECT_EQ(pair.zero->peer_node(), 1);
  ASSERT_TRUE(pair.one->send(secret_line));
  EXPECT_EQ(lines_from(*pair.zero), std::vector<std::string>{secret_line});
  ASSERT_TRUE(pair.zero->send("stop"));
  EXPECT_EQ(lines_from(*pair.one), std::vector<std::string>{"stop"});
}

// A link whose keep_alive came on time fails after the silence bound
// (30 s); one whose keep_alive came late because this launcher itself did
// not run (stopped with its whole job) does not count that time.
TEST(node_link_test, a_silent_peer_fails_the_link_but_a_stall_of_its_own_does_not) {
  node_zero zero{nullptr};
  ASSERT_NE(zero.port(), 0);
  auto pair = join(zero, nullptr, nullptr);
  ASSERT_TRUE(pair.zero && pair.one);
  auto start = link_clock::now();
  ASSERT_TRUE(pair.zero->keep_alive(start));
  EXPECT_TRUE(pair.zero->keep_alive(start + 40s));
  // Ticking on time from there, 31 s without a word from node 1 is silence.
  auto now = start + 40s;
  bool alive = true;
  for (int second = 1; second <= 31 && alive; ++second)
    alive = pair.zero->keep_alive(now + std::chrono::seconds{second});
  EXPECT_FALSE(alive);
  EXPECT_NE(pair.zero->why().find("silent for 30 s"), std::string::npos) << pair.zero->why();
}

TEST(node_link_test, in_clear_text_a_launcher_of_another_token_is_refused_by_its_proof) {
  node_zero zero{nullptr, quick_refusal_accept_bound};
  ASSERT_NE(zero.port(), 0);
  auto one = connect(zero.port(), nullptr, "another-job-token");
  ASSERT_TRUE(std::holds_alternative<std::string>(one));
  EXPECT_NE(std::get<std::string>(one).find(
                "refused this launcher: node 1 does not hold this job's LIFEBOAT_CLUSTER_TOKEN"),
            std::string::npos)
      << std::get<std::string>(one);
  EXPECT_TRUE(std::holds_alternative<std::string>(zero.result()));
}

// Global ranks are node * nproc + local rank, and node 0 classifies every
// node's worker exits by its own restart code: a launcher that would start
// another number of workers, or whose workers would exit with another code
// after a save, is refused before any worker starts.
TEST(node_link_test, a_launcher_of_another_shape_is_refused) {
  const std::vector<std::pair<job_shape, std::string>> others{
      {{nnodes, shape.nproc + 1, shape.restart_code}, "node 1 says --nproc 5, node 0 4"},
      {{nnodes, shape.nproc, shape.restart_code + 1}, "node 1 says --restart-code 43, node 0 42"}};
  for (const auto& [other, why] : others) {
    node_zero zero{nullptr, quick_refusal_accept_bound};
    ASSERT_NE(zero.port(), 0);
    auto one = connect(zero.port(), nullptr, token, other);
    ASSERT_TRUE(std::holds_alternative<std::string>(one));
    EXPECT_NE(std::get<std::string>(one).find("refused this launcher: " + why), std::string::npos)
        << std::get<std::string>(one);
    EXPECT_TRUE(std::holds_alternative<std::string>(zero.result()));
  }
}

// Two launchers linked with TLS (pre-shared key) through a recording proxy.
class node_link_tls_test : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(zero.port(), 0);
    proxy = std::make_unique<test::tcp_proxy>(zero.port());
    ASSERT_NE(proxy->port(), 0);
    pair = join(zero, proxy.get(), psk_context(tls_role::client));
    ASSERT_TRUE(pair.zero && pair.one);
  }

  node_zero zero{psk_context(tls_role::server)};
  std::unique_ptr<test::tcp_proxy> proxy;
  joined_pair pair;
};

TEST_F(node_link_tls_test, no_byte_of_the_channel_travels_in_clear_text) {
  ASSERT_TRUE(pair.one->send(secret_line));
  EXPECT_EQ(lines_from(*pair.zero), std::vector<std::string>{secret_line});
  ASSERT_TRUE(pair.zero->send("stop"));
  EXPECT_EQ(lines_from(*pair.one), std::vector<std::string>{"stop"});
  auto seen = proxy->recorded();
  EXPECT_FALSE(seen.empty());
  for (auto clear : {std::string{"secret-7f3a9c"}, std::string{"lifeboat-launch-control"},
                     std::string{"hello 1 2"}, std::string{"welcome"}, std::string{"stop"}})
    EXPECT_EQ(seen.find(clear), std::string::npos) << clear << " crossed in clear text";
}

TEST(node_link_test, with_certificates_the_launchers_link_too) {
  test::tls_certificates certs;
  ASSERT_TRUE(certs.error().empty()) << certs.error();
  auto server = tls_context::make(certs.config(), token, tls_role::server);
  auto client = tls_context::make(certs.config(), token, tls_role::client);
  ASSERT_TRUE(server && client);
  node_zero zero{*server};
  ASSERT_NE(zero.port(), 0);
  auto pair = join(zero, nullptr, *client);
  ASSERT_TRUE(pair.zero && pair.one);
  ASSERT_TRUE(pair.one->send(secret_line));
  EXPECT_EQ(lines_from(*pair.zero), std::vector<std::string>{secret_line});
}

TEST_F(node_link_tls_test, an_altered_byte_fails_the_link_and_delivers_nothing) {
  proxy->flip_next_upstream_byte();
  ASSERT_TRUE(pair.one->send(secret_line));
  std::vector<std::string> lines;
  std::string line;
  EXPECT_FALSE(pair.zero->read_line(line, link_clock::now() + 5s));
  EXPECT_TRUE(proxy->flipped());
  EXPECT_NE(pair.zero->why().find("TLS record rejected"), std::string::npos) << pair.zero->why();
  EXPECT_FALSE(pair.zero->receive(lines));
  EXPECT_TRUE(lines.empty());
}

TEST(node_link_test, a_node_zero_with_tls_refuses_a_clear_text_launcher_in_time) {
  node_zero zero{psk_context(tls_role::server), refusal_accept_bound};
  ASSERT_NE(zero.port(), 0);
  auto start = link_clock::now();
  auto one = connect(zero.port(), nullptr);
  ASSERT_TRUE(std::holds_alternative<std::string>(one));
  auto& why = std::get<std::string>(one);
  EXPECT_NE(why.find("did not greet"), std::string::npos) << why;
  EXPECT_NE(why.find("LIFEBOAT_TLS=1"), std::string::npos) << why;
  EXPECT_LT(link_clock::now() - start, connect_bound);
  EXPECT_TRUE(std::holds_alternative<std::string>(zero.result()));
}

TEST(node_link_test, a_launcher_with_tls_refuses_a_clear_text_node_zero_at_once) {
  node_zero zero{nullptr, quick_refusal_accept_bound};
  ASSERT_NE(zero.port(), 0);
  auto start = link_clock::now();
  auto one = connect(zero.port(), psk_context(tls_role::client));
  EXPECT_LT(link_clock::now() - start, handshake_bound);
  ASSERT_TRUE(std::holds_alternative<std::string>(one));
  auto& why = std::get<std::string>(one);
  EXPECT_NE(why.find("TLS handshake failed"), std::string::npos) << why;
  EXPECT_NE(why.find("LIFEBOAT_TLS"), std::string::npos) << why;
  EXPECT_TRUE(std::holds_alternative<std::string>(zero.result()));
}

TEST(node_link_test, with_tls_a_launcher_of_another_token_gets_no_link) {
  node_zero zero{psk_context(tls_role::server), quick_refusal_accept_bound};
  ASSERT_NE(zero.port(), 0);
  auto stranger = "another-job-token";
  auto start = link_clock::now();
  auto one = connect(zero.port(), psk_context(tls_role::client, stranger), stranger);
  EXPECT_LT(link_clock::now() - start, handshake_bound);
  ASSERT_TRUE(std::holds_alternative<std::string>(one));
  auto& why = std::get<std::string>(one);
  EXPECT_NE(why.find("refused this launcher: refused: TLS handshake failed"), std::string::npos)
      << why;
  EXPECT_NE(why.find("LIFEBOAT_CLUSTER_TOKEN"), std::string::npos) << why;
  EXPECT_TRUE(std::holds_alternative<std::string>(zero.result()));
}

// While node 0 waits for the rest, the launchers that joined hear its
// heartbeats (else each gave node 0 up after 30 s of silence), and one that
// leaves frees its place: its node's launcher, started again, joins.
TEST(node_link_test, node_zero_keeps_the_joined_launchers_while_it_waits_for_the_rest) {
  const job_shape three_nodes{3, shape.nproc, shape.restart_code};
  std::string error;
  auto listener = node_listener::listen("127.0.0.1", 0, error);
  ASSERT_TRUE(listener) << error;
  auto accepting = std::async(std::launch::async, [&] {
    return listener->accept_nodes(token, three_nodes, node_wait{link_clock::now() + accept_bound},
                                  nullptr);
  });
  auto join = [&](int node) {
    return connect_to_node_zero(
        "127.0.0.1", listener->port(), token, node, three_nodes,
        node_wait{link_clock::now() + connect_bound}, [] {}, nullptr);
  };
  {
    auto first = join(1);
    ASSERT_TRUE(std::holds_alternative<link_ptr>(first)) << std::get<std::string>(first);
    // Node 0's heartbeat, within a few of its 1 s intervals.
    pollfd p{std::get<link_ptr>(first)->fd(), POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, 3000), 1) << "node 0 sent nothing while it waited";
  }
  // The first link is closed; node 1's launcher comes again and is taken.
  auto again = join(1);
  ASSERT_TRUE(std::holds_alternative<link_ptr>(again)) << std::get<std::string>(again);
  auto other = join(2);
  ASSERT_TRUE(std::holds_alternative<link_ptr>(other)) << std::get<std::string>(other);
  auto result = accepting.get();
  ASSERT_TRUE(std::holds_alternative<std::vector<link_ptr>>(result))
      << std::get<std::string>(result);
  auto& links = std::get<std::vector<link_ptr>>(result);
  ASSERT_EQ(links.size(), 3u);
  EXPECT_TRUE(links[1] && links[2]);
}

// A readable descriptor ends either wait at once, long before its bound: the
// launcher's signalfd when a SIGTERM or SIGINT arrives.
class interrupted_wait : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(::pipe(fds_), 0); }
  void TearDown() override {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }

  // The descriptor readable before the wait starts: a signal that came first.
  void interrupt() {
    char byte = 1;
    ASSERT_EQ(::write(fds_[1], &byte, 1), 1);
  }

  node_wait long_wait() const { return node_wait{link_clock::now() + 60s, fds_[0]}; }

  int fds_[2] = {-1, -1};
};

TEST_F(interrupted_wait, ends_node_zeros_wait_for_the_other_launchers) {
  std::string error;
  auto listener = node_listener::listen("127.0.0.1", 0, error);
  ASSERT_TRUE(listener) << error;
  auto started = link_clock::now();
  interrupt();
  auto result = listener->accept_nodes(token, shape, long_wait(), nullptr);
  ASSERT_TRUE(std::holds_alternative<std::string>(result));
  EXPECT_EQ(std::get<std::string>(result), wait_interrupted);
  EXPECT_LT(link_clock::now() - started, 10s);
}

TEST_F(interrupted_wait, ends_a_launchers_wait_for_node_zero) {
  // Nothing listens there: the launcher retries until the wait ends.
  std::string error;
  uint16_t closed = 0;
  {
    auto probe = node_listener::listen("127.0.0.1", 0, error);
    ASSERT_TRUE(probe) << error;
    closed = probe->port();
  }
  auto started = link_clock::now();
  int waits = 0;
  interrupt();
  auto result = connect_to_node_zero(
      "127.0.0.1", closed, token, 1, shape, long_wait(), [&] { ++waits; }, nullptr);
  ASSERT_TRUE(std::holds_alternative<std::string>(result));
  EXPECT_EQ(std::get<std::string>(result), wait_interrupted);
  EXPECT_EQ(waits, 1);
  EXPECT_LT(link_clock::now() - started, 10s);
}

}  // namespace
