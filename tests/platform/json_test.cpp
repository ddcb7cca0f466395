#include "platform/json.hpp"

#include <gtest/gtest.h>

#include "messages/platform.pb.h"

namespace lifeboat {
namespace {

TEST(json, parses_platform_keys_and_ignores_unknown_fields) {
  wire::AzureScheduledEvents events;
  auto err = parse_json(
      R"({"DocumentIncarnation": 3, "Extra": 1, "Events": [{"EventId": "e", "EventType": "Preempt"}]})",
      events, "test");
  ASSERT_FALSE(err) << describe(err);
  EXPECT_EQ(events.document_incarnation(), 3);
  ASSERT_EQ(events.events_size(), 1);
  EXPECT_EQ(events.events(0).event_type(), "Preempt");
}

TEST(json, bad_json_names_the_document_with_the_given_code) {
  wire::AwsInstanceAction action;
  auto err = parse_json("{\"action\": ", action, "instance-action", errc::invalid_config);
  EXPECT_EQ(err, make_error(errc::invalid_config));
  EXPECT_NE(describe(err).find("instance-action: bad JSON"), std::string::npos);
}

TEST(json, writes_json_names) {
  wire::AzureStartRequests starts;
  starts.add_start_requests()->set_event_id("abc");
  EXPECT_EQ(to_json(starts), R"({"StartRequests":[{"EventId":"abc"}]})");
}

}  // namespace
}  // namespace lifeboat
