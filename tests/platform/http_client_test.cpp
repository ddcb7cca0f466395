#include "platform/http_client.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <string>

#include <gtest/gtest.h>

#include "messages/errors.hpp"
#include "tests/platform/mock_server.hpp"
#include "tests/support/loopback_port.hpp"

namespace lifeboat {
namespace {

using namespace std::chrono_literals;
using testing::mock_server;

http_request to_mock(const mock_server& mock, std::string method, std::string target) {
  http_request request;
  request.method = std::move(method);
  request.host = "127.0.0.1";
  request.port = mock.port();
  request.target = std::move(target);
  return request;
}

// Accepts one connection on `listener`, reads its request header, answers it
// with `reply` (any bytes) and closes it; returns the request header.
std::string answer_once(const test::held_port& listener, const std::string& reply) {
  int conn = ::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC);
  if (conn < 0) return "";
  std::string head;
  char buf[512];
  while (head.find("\r\n\r\n") == std::string::npos) {
    auto n = ::recv(conn, buf, sizeof(buf), 0);
    if (n <= 0) break;
    head.append(buf, static_cast<size_t>(n));
  }
  EXPECT_EQ(::send(conn, reply.data(), reply.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(reply.size()));
  ::close(conn);
  return head;
}

TEST(http_client, get_sends_headers_and_returns_status_headers_and_body) {
  mock_server mock;
  auto request = to_mock(mock, "GET", "/computeMetadata/v1/instance/hostname");
  request.headers.push_back({"Metadata-Flavor", "Google"});
  auto reply = http_send(request, 5s);
  ASSERT_TRUE(reply) << describe(reply.error());
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, "mock-vm.internal");
  EXPECT_EQ(reply->header("metadata-flavor"), std::optional<std::string>{"Google"});
  EXPECT_EQ(reply->header("X-Missing"), std::nullopt);
}

TEST(http_client, non_2xx_status_is_a_response_not_an_error) {
  mock_server mock;
  auto reply = http_send(to_mock(mock, "GET", "/computeMetadata/v1/instance/hostname"), 5s);
  ASSERT_TRUE(reply) << describe(reply.error());
  EXPECT_EQ(reply->status, 403);
}

TEST(http_client, put_and_post_carry_a_body) {
  mock_server mock;
  auto put = to_mock(mock, "PUT", "/latest/api/token");
  put.headers.push_back({"X-aws-ec2-metadata-token-ttl-seconds", "60"});
  auto token = http_send(put, 5s);
  ASSERT_TRUE(token) << describe(token.error());
  EXPECT_EQ(token->status, 200);
  EXPECT_FALSE(token->body.empty());

  auto post = to_mock(mock, "POST", "/metadata/scheduledevents?api-version=2020-07-01");
  post.headers.push_back({"Metadata", "true"});
  post.body = R"({"StartRequests": [{"EventId": "abc"}]})";
  auto ack = http_send(post, 5s);
  ASSERT_TRUE(ack) << describe(ack.error());
  EXPECT_EQ(ack->status, 200);
  EXPECT_EQ(mock.read("azure/acknowledged"), "abc\n");
}

TEST(http_client, refused_connection_is_unavailable_and_names_host_and_port) {
  http_request request;
  request.host = "127.0.0.1";
  request.port = test::unused_port();
  auto reply = http_send(request, 5s);
  ASSERT_FALSE(reply);
  EXPECT_EQ(reply.error(), make_error(errc::unavailable));
  EXPECT_NE(describe(reply.error()).find("127.0.0.1:" + std::to_string(request.port)),
            std::string::npos);
}

TEST(http_client, slow_server_times_out_within_the_bound) {
  mock_server mock{{"--delay-ms", "5000"}};
  auto start = std::chrono::steady_clock::now();
  auto reply = http_send(to_mock(mock, "GET", "/computeMetadata/v1/instance/hostname"), 300ms);
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(reply);
  EXPECT_EQ(reply.error(), make_error(errc::timeout)) << describe(reply.error());
  EXPECT_NE(describe(reply.error()).find(mock.address()), std::string::npos);
  EXPECT_GE(elapsed, 300ms);
  EXPECT_LT(elapsed, 1500ms);
}

TEST(http_client, garbage_reply_is_unavailable) {
  mock_server mock{{"--garbage"}};
  auto reply = http_send(to_mock(mock, "GET", "/computeMetadata/v1/instance/hostname"), 5s);
  ASSERT_FALSE(reply);
  EXPECT_EQ(reply.error(), make_error(errc::unavailable)) << describe(reply.error());
}

// An IPv6 address goes into the Host header and into errors in brackets:
// "Host: ::1:80" is no valid header (RFC 9110), and "::1:80" no address.
TEST(http_client, an_ipv6_host_is_named_in_brackets) {
  test::held_port listener{AF_INET6};
  if (listener.port() == 0) GTEST_SKIP() << "no IPv6 loopback (::1) here";
  http_request request;
  request.host = "::1";
  request.port = listener.port();
  auto reply = std::async(std::launch::async, [&] { return http_send(request, 5s); });
  auto head = answer_once(listener, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  auto answer = reply.get();
  ASSERT_TRUE(answer) << describe(answer.error());
  EXPECT_EQ(answer->body, "ok");
  EXPECT_NE(head.find("\r\nHost: [::1]:" + std::to_string(listener.port()) + "\r\n"),
            std::string::npos)
      << head;
  request.port = test::unused_port(AF_INET6);
  auto refused = http_send(request, 5s);
  ASSERT_FALSE(refused);
  EXPECT_NE(describe(refused.error()).find("[::1]:" + std::to_string(request.port)),
            std::string::npos)
      << describe(refused.error());
}

// A Content-Length far over the body limit, with some of the body in the
// same packet as the header: the client must refuse it, not reserve it.
TEST(http_client, a_body_longer_than_the_limit_is_refused_unread) {
  test::held_port listener;
  ASSERT_NE(listener.port(), 0);
  http_request request;
  request.host = "127.0.0.1";
  request.port = listener.port();
  auto reply = std::async(std::launch::async, [&] { return http_send(request, 5s); });
  answer_once(listener,
              "HTTP/1.1 200 OK\r\nContent-Length: 0010000000000040\r\n\r\n{\"Events\": []}");
  auto answer = reply.get();
  ASSERT_FALSE(answer);
  EXPECT_EQ(answer.error(), make_error(errc::unavailable)) << describe(answer.error());
  EXPECT_NE(describe(answer.error()).find("body limit"), std::string::npos)
      << describe(answer.error());
}

TEST(http_client, unknown_method_is_invalid_argument) {
  http_request request;
  request.method = "FETCH";
  request.host = "127.0.0.1";
  auto reply = http_send(request, 1s);
  ASSERT_FALSE(reply);
  EXPECT_EQ(reply.error(), make_error(errc::invalid_argument));
}

}  // namespace
}  // namespace lifeboat
