#include "platform/gce_source.hpp"

#include <future>

#include <gtest/gtest.h>

#include "messages/errors.hpp"
#include "platform/clock.hpp"
#include "tests/platform/fake_env.hpp"
#include "tests/platform/mock_server.hpp"

namespace lifeboat {
namespace {

using namespace std::chrono_literals;
using testing::mock_server;
using testing::table_env;

constexpr auto kNoticeLeadTolerance = 5000;  // ms of slack on "now + lead"

struct gce_fixture {
  explicit gce_fixture(std::vector<std::string> flags = {}) : mock(std::move(flags)) {
    table["GCE_METADATA_HOST"] = mock.address();
    auto made = make_gce_source(table_env(table));
    if (!made) throw std::runtime_error(describe(made.error()));
    source = std::move(*made);
  }
  mock_server mock;
  std::map<std::string, std::string> table;
  notice_source_ptr source;
};

TEST(gce_source, no_notice_gives_nothing) {
  gce_fixture f;
  auto polled = f.source->poll(1s);
  ASSERT_TRUE(polled) << describe(polled.error());
  EXPECT_FALSE(*polled);
}

TEST(gce_source, terminate_maintenance_is_a_notice_sixty_seconds_ahead) {
  gce_fixture f{{"--gce-maintenance-event", "TERMINATE_ON_HOST_MAINTENANCE"}};
  auto before = unix_now_ms();
  auto polled = f.source->poll(1s);
  ASSERT_TRUE(polled) << describe(polled.error());
  ASSERT_TRUE(*polled);
  EXPECT_EQ((*polled)->source, "gce:maintenance-event");
  EXPECT_NEAR((*polled)->deadline_unix_ms, before + 60'000, kNoticeLeadTolerance);
}

TEST(gce_source, migrate_maintenance_is_not_a_notice) {
  gce_fixture f{{"--gce-maintenance-event", "MIGRATE_ON_HOST_MAINTENANCE"}};
  auto polled = f.source->poll(1s);
  ASSERT_TRUE(polled) << describe(polled.error());
  EXPECT_FALSE(*polled);
}

TEST(gce_source, preempted_is_a_notice_thirty_seconds_ahead_and_stays) {
  gce_fixture f;
  auto first = f.source->poll(1s);
  ASSERT_TRUE(first && !*first);
  f.mock.control("gce/preempted", "TRUE");
  auto before = unix_now_ms();
  auto polled = f.source->poll(1s);
  ASSERT_TRUE(polled) << describe(polled.error());
  ASSERT_TRUE(*polled);
  EXPECT_EQ((*polled)->source, "gce:preempted");
  EXPECT_NEAR((*polled)->deadline_unix_ms, before + 30'000, kNoticeLeadTolerance);
  f.mock.control("gce/preempted", "FALSE");
  auto again = f.source->poll(1s);
  ASSERT_TRUE(again && *again);
  EXPECT_EQ((*again)->deadline_unix_ms, (*polled)->deadline_unix_ms);
}

TEST(gce_source, hanging_get_returns_as_soon_as_maintenance_event_changes) {
  gce_fixture f;
  auto first = f.source->poll(1s);  // learns the current ETag
  ASSERT_TRUE(first && !*first);
  auto start = std::chrono::steady_clock::now();
  auto pending = std::async(std::launch::async, [&] { return f.source->poll(20s); });
  ASSERT_TRUE(f.mock.wait_for_stat("gce_hanging", 1, 10s)) << "no hanging GET arrived";
  f.mock.control("gce/maintenance-event", "TERMINATE_ON_HOST_MAINTENANCE");
  auto polled = pending.get();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  ASSERT_TRUE(polled) << describe(polled.error());
  ASSERT_TRUE(*polled);
  EXPECT_EQ((*polled)->source, "gce:maintenance-event");
}

TEST(gce_source, retries_503_within_the_poll) {
  gce_fixture f;
  f.mock.control("gce/unavailable", "2");
  auto polled = f.source->poll(3s);
  ASSERT_TRUE(polled) << describe(polled.error());
  EXPECT_FALSE(*polled);
}

TEST(gce_source, reply_without_flavor_header_is_an_error) {
  gce_fixture f;
  f.mock.control("gce/flavor", "0");
  auto polled = f.source->poll(1s);
  ASSERT_FALSE(polled);
  EXPECT_NE(describe(polled.error()).find("not a GCE metadata server"), std::string::npos);
  EXPECT_FALSE(gce_metadata_reachable({"127.0.0.1", f.mock.port()}, 2s));
}

TEST(gce_source, slow_server_fails_within_the_bound_and_polling_continues) {
  gce_fixture f{{"--delay-ms", "3000"}};
  auto start = std::chrono::steady_clock::now();
  auto polled = f.source->poll(500ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  ASSERT_FALSE(polled);
  EXPECT_EQ(polled.error(), make_error(errc::timeout)) << describe(polled.error());
  f.mock.control("delay-ms", "0");
  f.mock.control("gce/maintenance-event", "TERMINATE_ON_HOST_MAINTENANCE");
  auto later = f.source->poll(1s);
  ASSERT_TRUE(later) << describe(later.error());
  EXPECT_TRUE(*later);
}

TEST(gce_source, garbage_is_an_error) {
  gce_fixture f{{"--garbage"}};
  auto polled = f.source->poll(1s);
  ASSERT_FALSE(polled);
  EXPECT_EQ(polled.error(), make_error(errc::unavailable)) << describe(polled.error());
}

TEST(gce_source, unexpected_value_is_an_error) {
  gce_fixture f{{"--gce-maintenance-event", "SOMETHING_NEW"}};
  auto polled = f.source->poll(1s);
  ASSERT_FALSE(polled);
  EXPECT_NE(describe(polled.error()).find("SOMETHING_NEW"), std::string::npos);
}

TEST(gce_source, reachability_probe) {
  mock_server mock;
  EXPECT_TRUE(gce_metadata_reachable({"127.0.0.1", mock.port()}, 2s));
}

TEST(gce_source, malformed_endpoint_variable_is_invalid_config) {
  std::map<std::string, std::string> table{{"GCE_METADATA_HOST", "host:notaport"}};
  auto source = make_gce_source(table_env(table));
  ASSERT_FALSE(source);
  EXPECT_EQ(source.error(), make_error(errc::invalid_config));
  EXPECT_NE(describe(source.error()).find("GCE_METADATA_HOST"), std::string::npos);
}

}  // namespace
}  // namespace lifeboat
