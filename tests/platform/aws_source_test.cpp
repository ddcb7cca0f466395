#include "platform/aws_source.hpp"

#include <gtest/gtest.h>

#include "messages/errors.hpp"
#include "platform/timestamp.hpp"
#include "tests/platform/fake_env.hpp"
#include "tests/platform/mock_server.hpp"

namespace lifeboat {
namespace {

using namespace std::chrono_literals;
using testing::mock_server;
using testing::table_env;

constexpr char kAction[] = R"({"action": "terminate", "time": "2017-09-18T08:22:00Z"})";

struct aws_fixture {
  explicit aws_fixture(std::vector<std::string> flags = {}, bool rebalance_is_notice = false)
      : mock(std::move(flags)) {
    table["LIFEBOAT_AWS_METADATA"] = mock.address();
    auto made = make_aws_source(table_env(table), rebalance_is_notice);
    if (!made) throw std::runtime_error(describe(made.error()));
    source = std::move(*made);
  }
  mock_server mock;
  std::map<std::string, std::string> table;
  notice_source_ptr source;
};

TEST(aws_source, no_instance_action_gives_nothing) {
  aws_fixture f;
  auto polled = f.source->poll(1s);
  ASSERT_TRUE(polled) << describe(polled.error());
  EXPECT_FALSE(*polled);
  EXPECT_EQ(f.mock.stat("aws_token_puts"), 1);
}

TEST(aws_source, instance_action_is_a_notice_with_its_time_as_deadline) {
  aws_fixture f;
  ASSERT_TRUE(f.source->poll(1s));
  f.mock.control("aws/instance-action", kAction);
  auto polled = f.source->poll(1s);
  ASSERT_TRUE(polled) << describe(polled.error());
  ASSERT_TRUE(*polled);
  EXPECT_EQ((*polled)->source, "aws:spot-terminate");
  EXPECT_EQ((*polled)->deadline_unix_ms, *parse_iso8601_ms("2017-09-18T08:22:00Z"));
  EXPECT_EQ(f.mock.stat("aws_token_puts"), 1) << "the token is cached";
}

TEST(aws_source, expired_token_is_refreshed_on_401) {
  aws_fixture f;
  ASSERT_TRUE(f.source->poll(1s));
  f.mock.control("aws/expire-tokens");
  auto polled = f.source->poll(1s);
  ASSERT_TRUE(polled) << describe(polled.error());
  EXPECT_FALSE(*polled);
  EXPECT_EQ(f.mock.stat("aws_token_puts"), 2);
  EXPECT_GE(f.mock.stat("aws_unauthorized"), 1);
}

TEST(aws_source, rebalance_is_only_logged_by_default) {
  aws_fixture f{{"--aws-rebalance", R"({"noticeTime": "2020-10-27T08:22:00Z"})"}};
  auto polled = f.source->poll(1s);
  ASSERT_TRUE(polled) << describe(polled.error());
  EXPECT_FALSE(*polled);
}

TEST(aws_source, rebalance_is_a_notice_when_configured) {
  aws_fixture f{{"--aws-rebalance", R"({"noticeTime": "2020-10-27T08:22:00Z"})"}, true};
  auto polled = f.source->poll(1s);
  ASSERT_TRUE(polled) << describe(polled.error());
  ASSERT_TRUE(*polled);
  EXPECT_EQ((*polled)->source, "aws:rebalance");
  EXPECT_EQ((*polled)->deadline_unix_ms, 0);
}

TEST(aws_source, bad_json_is_an_error_and_polling_continues) {
  aws_fixture f{{"--aws-instance-action", "{not json"}};
  auto polled = f.source->poll(1s);
  ASSERT_FALSE(polled);
  EXPECT_NE(describe(polled.error()).find("bad JSON"), std::string::npos);
  f.mock.control("aws/instance-action", kAction);
  auto later = f.source->poll(1s);
  ASSERT_TRUE(later) << describe(later.error());
  EXPECT_TRUE(*later);
}

TEST(aws_source, bad_time_is_an_error) {
  aws_fixture f{{"--aws-instance-action", R"({"action": "stop", "time": "soon"})"}};
  EXPECT_FALSE(f.source->poll(1s));
}

TEST(aws_source, slow_server_fails_within_the_bound) {
  aws_fixture f{{"--delay-ms", "3000"}};
  auto start = std::chrono::steady_clock::now();
  auto polled = f.source->poll(500ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  ASSERT_FALSE(polled);
  EXPECT_EQ(polled.error(), make_error(errc::timeout));
}

TEST(aws_source, garbage_is_an_error) {
  aws_fixture f{{"--garbage"}};
  auto polled = f.source->poll(1s);
  ASSERT_FALSE(polled);
  EXPECT_EQ(polled.error(), make_error(errc::unavailable));
}

TEST(aws_source, reachability_probe) {
  mock_server mock;
  EXPECT_TRUE(aws_metadata_reachable({"127.0.0.1", mock.port()}, 2s));
}

}  // namespace
}  // namespace lifeboat
