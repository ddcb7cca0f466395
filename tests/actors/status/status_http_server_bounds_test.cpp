// The status endpoint's bounds under the one policy of status_http_limits:
// the whole request within read_timeout, whether the client sends nothing or
// trickles a byte a second (slowloris), and a connection cap that a flood of
// such clients cannot push past. Real sockets on 127.0.0.1.

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "actors/status/status_http_server.hpp"
#include "tests/actors/status/status_test_support.hpp"

namespace lifeboat {
namespace {

using namespace std::chrono_literals;
using test::clock_type;
using test::raw_connection;

// Long enough for two bytes at one a second, short enough for a quick test.
constexpr auto read_timeout = 2500ms;
constexpr auto trickle_interval = 1000ms;
// How late after the bound the close may come on a busy machine.
constexpr auto close_margin = 1500ms;

std::unique_ptr<status_http_server> serve(const status_http_limits& limits) {
  auto bound = status_http_server::bind(0, limits);
  EXPECT_TRUE(bound) << describe(bound.error());
  if (!bound) return nullptr;
  auto server = std::move(*bound);
  server->serve([s = server.get()](const status_http_request& req, uint64_t id) {
    s->complete(id, {200, "text/plain", req.target, {}});
    return true;
  });
  return server;
}

status_http_limits short_read_timeout() {
  status_http_limits limits;
  limits.read_timeout = read_timeout;
  return limits;
}

TEST(status_http_server_bounds, a_client_that_sends_nothing_is_closed_within_the_read_timeout) {
  auto server = serve(short_read_timeout());
  ASSERT_TRUE(server);
  auto start = clock_type::now();
  raw_connection c{server->port()};
  ASSERT_TRUE(c.connected());
  auto reply = c.read_until_close(start + read_timeout + close_margin);
  ASSERT_TRUE(reply) << "still open after the read timeout";
  EXPECT_EQ(*reply, "");
  EXPECT_GE(clock_type::now() - start, read_timeout - 50ms);
}

TEST(status_http_server_bounds,
     a_client_that_sends_a_byte_a_second_is_closed_within_the_read_timeout) {
  auto server = serve(short_read_timeout());
  ASSERT_TRUE(server);
  const std::string request = "GET /status HTTP/1.1\r\nHost: x\r\n\r\n";
  auto start = clock_type::now();
  raw_connection c{server->port()};
  ASSERT_TRUE(c.connected());
  size_t sent = 0;
  std::optional<std::string> reply;
  // Each wait for the close is also the pause between two bytes.
  while (!reply && sent < request.size()) {
    ASSERT_TRUE(c.send(request.substr(sent, 1)));
    ++sent;
    reply = c.read_until_close(clock_type::now() + trickle_interval);
    ASSERT_LT(clock_type::now() - start, read_timeout + close_margin);
  }
  ASSERT_TRUE(reply);
  EXPECT_EQ(*reply, "") << "a request that never completed was answered";
  EXPECT_GE(sent, 2u);
  EXPECT_LT(sent, request.size());
  EXPECT_EQ(server->stats().requests, 0u);
}

// Idle clients hold at most max_connections slots; each is freed by the read
// timeout, after which a well-behaved client is served again.
TEST(status_http_server_bounds, a_flood_of_idle_clients_is_capped_and_then_timed_out) {
  auto limits = short_read_timeout();
  limits.max_connections = 8;
  auto server = serve(limits);
  ASSERT_TRUE(server);
  constexpr size_t flood = 100;
  std::vector<std::unique_ptr<raw_connection>> idle;
  for (size_t i = 0; i < flood; ++i) {
    idle.push_back(std::make_unique<raw_connection>(server->port()));
    ASSERT_TRUE(idle.back()->connected());
  }
  auto deadline = clock_type::now() + read_timeout + close_margin;
  for (auto& c : idle) ASSERT_TRUE(c->read_until_close(deadline)) << "still open";
  // A rejected connection is counted before it is closed; a timed-out one
  // after, so only the former can be checked here.
  EXPECT_GE(server->stats().rejected_connections, flood - limits.max_connections);
  raw_connection c{server->port()};
  ASSERT_TRUE(c.send("GET /after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  auto reply = c.read_until_close(clock_type::now() + 5s);
  ASSERT_TRUE(reply);
  EXPECT_NE(reply->find("/after"), std::string::npos) << *reply;
}

}  // namespace
}  // namespace lifeboat
