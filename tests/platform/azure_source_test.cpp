#include "platform/azure_source.hpp"

#include <gtest/gtest.h>

#include "messages/errors.hpp"
#include "platform/clock.hpp"
#include "platform/timestamp.hpp"
#include "tests/platform/fake_env.hpp"
#include "tests/platform/mock_server.hpp"

namespace lifeboat {
namespace {

using namespace std::chrono_literals;
using testing::mock_server;
using testing::table_env;

constexpr char kPreempt[] = R"([{"EventId": "602d9444", "EventType": "Preempt",
  "ResourceType": "VirtualMachine", "Resources": ["vm1"], "EventStatus": "Scheduled",
  "NotBefore": "Mon, 11 Apr 2022 22:26:58 GMT", "Description": "spot eviction",
  "EventSource": "Platform", "DurationInSeconds": -1}])";
constexpr char kReboot[] = R"([{"EventId": "r1", "EventType": "Reboot",
  "EventStatus": "Scheduled", "NotBefore": "Mon, 11 Apr 2022 22:26:58 GMT"}])";

struct azure_fixture {
  explicit azure_fixture(std::vector<std::string> flags = {}) : mock(std::move(flags)) {
    table["LIFEBOAT_AZURE_METADATA"] = mock.address();
    auto made = make_azure_source(table_env(table));
    if (!made) throw std::runtime_error(describe(made.error()));
    source = std::move(*made);
  }
  mock_server mock;
  std::map<std::string, std::string> table;
  notice_source_ptr source;
};

TEST(azure_source, no_events_gives_nothing) {
  azure_fixture f;
  auto polled = f.source->poll(1s);
  ASSERT_TRUE(polled) << describe(polled.error());
  EXPECT_FALSE(*polled);
}

TEST(azure_source, reboot_is_not_a_notice) {
  azure_fixture f{{"--azure-events", kReboot}};
  auto polled = f.source->poll(1s);
  ASSERT_TRUE(polled) << describe(polled.error());
  EXPECT_FALSE(*polled);
}

TEST(azure_source, preempt_is_a_notice_with_not_before_as_deadline_and_is_acknowledged) {
  azure_fixture f;
  ASSERT_TRUE(f.source->poll(1s));
  f.mock.control("azure/events", kPreempt);
  auto polled = f.source->poll(1s);
  ASSERT_TRUE(polled) << describe(polled.error());
  ASSERT_TRUE(*polled);
  EXPECT_EQ((*polled)->source, "azure:Preempt");
  EXPECT_EQ((*polled)->deadline_unix_ms, *parse_rfc1123_ms("Mon, 11 Apr 2022 22:26:58 GMT"));
  EXPECT_EQ(f.mock.read("azure/acknowledged"), "");
  f.source->acknowledge();
  EXPECT_EQ(f.mock.read("azure/acknowledged"), "602d9444\n");
}

TEST(azure_source, started_terminate_has_a_deadline_of_now) {
  azure_fixture f{{"--azure-events",
                   R"([{"EventId": "t1", "EventType": "Terminate", "EventStatus": "Started",
                        "NotBefore": ""}])"}};
  auto before = unix_now_ms();
  auto polled = f.source->poll(1s);
  ASSERT_TRUE(polled) << describe(polled.error());
  ASSERT_TRUE(*polled);
  EXPECT_EQ((*polled)->source, "azure:Terminate");
  EXPECT_GE((*polled)->deadline_unix_ms, before);
  EXPECT_LE((*polled)->deadline_unix_ms, unix_now_ms());
}

TEST(azure_source, acknowledge_without_notice_sends_nothing) {
  azure_fixture f;
  f.source->acknowledge();
  EXPECT_EQ(f.mock.stat("azure_requests"), 0);
}

TEST(azure_source, bad_json_is_an_error) {
  azure_fixture f{{"--azure-events", "[{broken"}};
  auto polled = f.source->poll(1s);
  ASSERT_FALSE(polled);
  EXPECT_NE(describe(polled.error()).find("bad JSON"), std::string::npos);
}

TEST(azure_source, slow_server_fails_within_the_bound) {
  azure_fixture f{{"--delay-ms", "3000"}};
  auto start = std::chrono::steady_clock::now();
  auto polled = f.source->poll(500ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  ASSERT_FALSE(polled);
  EXPECT_EQ(polled.error(), make_error(errc::timeout));
}

TEST(azure_source, garbage_is_an_error) {
  azure_fixture f{{"--garbage"}};
  EXPECT_FALSE(f.source->poll(1s));
}

TEST(azure_source, reachability_probe) {
  mock_server mock;
  EXPECT_TRUE(azure_metadata_reachable({"127.0.0.1", mock.port()}, 2s));
}

}  // namespace
}  // namespace lifeboat
