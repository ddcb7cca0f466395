#include "platform/timestamp.hpp"

#include <gtest/gtest.h>

namespace lifeboat {
namespace {

// 2017-09-18T08:22:00Z, computed independently: 17427 days since the epoch.
constexpr int64_t kAwsExampleMs = (17427LL * 86400 + 8 * 3600 + 22 * 60) * 1000;

TEST(timestamp, iso8601) {
  EXPECT_EQ(*parse_iso8601_ms("2017-09-18T08:22:00Z"), kAwsExampleMs);
  EXPECT_EQ(*parse_iso8601_ms("2017-09-18T08:22:00.250Z"), kAwsExampleMs + 250);
  EXPECT_EQ(*parse_iso8601_ms("2017-09-18T10:22:00+02:00"), kAwsExampleMs);
  EXPECT_EQ(*parse_iso8601_ms("2017-09-18T07:22:00-01:00"), kAwsExampleMs);
  for (auto bad : {"", "soon", "2017-09-18", "2017-09-18T08:22:00", "2017-09-18T08:22:00X",
                   "2017-09-18T08:22:00+2"})
    EXPECT_FALSE(parse_iso8601_ms(bad)) << bad;
}

TEST(timestamp, rfc1123) {
  // Mon, 11 Apr 2022 22:26:58 GMT: 19093 days since the epoch.
  EXPECT_EQ(*parse_rfc1123_ms("Mon, 11 Apr 2022 22:26:58 GMT"),
            (19093LL * 86400 + 22 * 3600 + 26 * 60 + 58) * 1000);
  for (auto bad : {"", "11 Apr 2022", "Mon, 11 Apr 2022 22:26:58 GMT junk"})
    EXPECT_FALSE(parse_rfc1123_ms(bad)) << bad;
}

}  // namespace
}  // namespace lifeboat
