#include "actors/status/status_http_server.hpp"

#include <gtest/gtest.h>

#include <atomic>

#include "platform/http_client.hpp"
#include "tests/actors/status/status_test_support.hpp"

namespace lifeboat {
namespace {

using namespace std::chrono_literals;
using test::clock_type;
using test::raw_connection;

constexpr auto http_timeout = 5s;

// A server whose handler echoes method and target, so each test sees what
// reached the handler; `answer` = false leaves requests unanswered.
class status_http_server_test : public testing::Test {
 protected:
  void start(status_http_limits limits = {}, bool answer = true, bool accept = true) {
    auto bound = status_http_server::bind(0, limits);
    ASSERT_TRUE(bound) << describe(bound.error());
    server_ = std::move(*bound);
    server_->serve([this, answer, accept](const status_http_request& req, uint64_t id) {
      ++handled_;
      if (answer) server_->complete(id, {200, "text/plain", req.method + " " + req.target, {}});
      return accept;
    });
  }

  caf::expected<http_response> get(const std::string& target) {
    http_request req;
    req.host = "127.0.0.1";
    req.port = server_->port();
    req.target = target;
    return http_send(req, http_timeout);
  }

  std::unique_ptr<status_http_server> server_;
  std::atomic<int> handled_{0};
};

TEST_F(status_http_server_test, hands_requests_to_the_handler_and_sends_its_reply) {
  start();
  auto res = get("/a?b=c");
  ASSERT_TRUE(res) << describe(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "GET /a?b=c");
  EXPECT_EQ(res->header("Content-Type").value_or(""), "text/plain");
  EXPECT_EQ(res->header("Server").value_or(""), "lifeboat");
  EXPECT_EQ(server_->stats().requests, 1u);
}

TEST_F(status_http_server_test, serves_several_requests_on_a_kept_alive_connection) {
  start();
  raw_connection c{server_->port()};
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(
      c.send("GET /one HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\n"
             "Connection: close\r\n\r\n"));
  auto reply = c.read_until_close(clock_type::now() + http_timeout);
  ASSERT_TRUE(reply);
  EXPECT_NE(reply->find("GET /one"), std::string::npos) << *reply;
  EXPECT_NE(reply->find("GET /two"), std::string::npos) << *reply;
  EXPECT_EQ(handled_, 2);
}

TEST_F(status_http_server_test, answers_503_when_the_handler_refuses_or_never_answers) {
  status_http_limits limits;
  limits.reply_timeout = 100ms;
  start(limits, false, true);
  auto late = get("/slow");
  ASSERT_TRUE(late) << describe(late.error());
  EXPECT_EQ(late->status, 503);
  EXPECT_EQ(server_->stats().reply_timeouts, 1u);
  server_->stop();
  start(limits, false, false);
  auto refused = get("/refused");
  ASSERT_TRUE(refused) << describe(refused.error());
  EXPECT_EQ(refused->status, 503);
}

TEST_F(status_http_server_test, ignores_a_completion_for_an_unknown_request) {
  start();
  server_->complete(424242, {200, "text/plain", "stray", {}});
  auto res = get("/x");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, "GET /x");
}

TEST_F(status_http_server_test, rejects_connections_over_the_cap) {
  status_http_limits limits;
  limits.max_connections = 4;
  start(limits);
  std::vector<std::unique_ptr<raw_connection>> held;
  for (std::size_t i = 0; i < limits.max_connections; ++i) {
    held.push_back(std::make_unique<raw_connection>(server_->port()));
    ASSERT_TRUE(held.back()->connected());
  }
  // Connections are accepted in the order they were made, so the extra ones
  // find all the held ones open and are closed at once.
  for (int i = 0; i < 3; ++i) {
    raw_connection extra{server_->port()};
    auto reply = extra.read_until_close(clock_type::now() + http_timeout);
    ASSERT_TRUE(reply);
    EXPECT_EQ(*reply, "");
  }
  EXPECT_EQ(server_->stats().rejected_connections, 3u);
  held.clear();
  // The closed connections free their slots; wait for the server to notice.
  auto deadline = clock_type::now() + http_timeout;
  caf::expected<http_response> res = get("/after");
  while (!res && clock_type::now() < deadline) res = get("/after");
  ASSERT_TRUE(res) << describe(res.error());
  EXPECT_EQ(res->body, "GET /after");
}

TEST_F(status_http_server_test, answers_400_to_oversized_headers) {
  status_http_limits limits;
  limits.header_limit = 512;
  start(limits);
  raw_connection c{server_->port()};
  c.send("GET / HTTP/1.1\r\nX: " + std::string(600, 'y') + "\r\n\r\n");
  auto reply = c.read_until_close(clock_type::now() + http_timeout);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->rfind("HTTP/1.1 400", 0), 0u) << *reply;
  EXPECT_EQ(server_->stats().bad_requests, 1u);
  EXPECT_EQ(handled_, 0);
}

// The body sent with the header looks like a header of its own: it must
// neither reach the handler nor make the server wait for more.
TEST_F(status_http_server_test, answers_400_to_a_body_over_the_limit) {
  status_http_limits limits;
  limits.body_limit = 16;
  start(limits);
  raw_connection c{server_->port()};
  c.send("POST /a HTTP/1.1\r\nContent-Length: 5000\r\n\r\nX: y\r\n\r\n");
  auto reply = c.read_until_close(clock_type::now() + http_timeout);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->rfind("HTTP/1.1 400", 0), 0u) << *reply;
  EXPECT_EQ(server_->stats().bad_requests, 1u);
  EXPECT_EQ(handled_, 0);
}

TEST_F(status_http_server_test, stops_promptly_and_closes_every_connection) {
  start();
  raw_connection idle{server_->port()};
  raw_connection partial{server_->port()};
  partial.send("GET / HTTP/1.1\r\n");
  auto port = server_->port();
  auto before = clock_type::now();
  server_->stop();
  EXPECT_LT(clock_type::now() - before, 1s);
  server_.reset();
  EXPECT_TRUE(idle.read_until_close(clock_type::now() + http_timeout));
  EXPECT_TRUE(partial.read_until_close(clock_type::now() + http_timeout));
  EXPECT_TRUE(test::port_closed_before(port, clock_type::now() + http_timeout));
}

TEST(status_http_server, fails_to_bind_a_port_in_use) {
  auto first = status_http_server::bind(0, {});
  ASSERT_TRUE(first);
  auto second = status_http_server::bind((*first)->port(), {});
  ASSERT_FALSE(second);
  EXPECT_NE(describe(second.error()).find("cannot bind 127.0.0.1:"), std::string::npos)
      << describe(second.error());
}

// "::1:P" would not say where the address ends and the port begins.
TEST(status_http_server, names_an_ipv6_address_in_brackets) {
  auto first = status_http_server::bind(0, {}, "::1");
  if (!first) GTEST_SKIP() << "no IPv6 loopback (::1) here: " << describe(first.error());
  auto port = (*first)->port();
  auto second = status_http_server::bind(port, {}, "::1");
  ASSERT_FALSE(second);
  EXPECT_NE(describe(second.error()).find("cannot bind [::1]:" + std::to_string(port) + ": "),
            std::string::npos)
      << describe(second.error());
}

// LIFEBOAT_STATUS_HOST: another address of this host (all of 127/8 is
// loopback on Linux), and what is no address at all.
TEST(status_http_server, binds_the_address_it_is_given_and_refuses_what_is_none) {
  // The same port is free on 127.0.0.1: the server holds 127.0.0.2 only.
  // Another process (a test beside this one) may hold the port the kernel
  // picked on 127.0.0.1: a few tries, each with a new port, tell that apart
  // from a server that holds every address, which fails them all.
  constexpr int tries = 5;
  caf::error last;
  bool both = false;
  for (int i = 0; i < tries && !both; ++i) {
    auto other = status_http_server::bind(0, {}, "127.0.0.2");
    ASSERT_TRUE(other) << describe(other.error());
    EXPECT_NE((*other)->port(), 0);
    auto loopback = status_http_server::bind((*other)->port(), {});
    both = static_cast<bool>(loopback);
    if (!loopback) last = loopback.error();
  }
  EXPECT_TRUE(both) << describe(last);
  auto none = status_http_server::bind(0, {}, "status.example");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error(), make_error(errc::invalid_config));
}

}  // namespace
}  // namespace lifeboat
