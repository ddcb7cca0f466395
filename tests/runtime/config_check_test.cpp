// check_config: a termination_config is checked before anything starts, and
// each wrong field is named with what is expected (config_test sees the same
// through a worker process).
#include "runtime/config_check.hpp"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "messages/errors.hpp"

namespace lifeboat {
namespace {

using namespace std::chrono_literals;

// The error for a default config changed by `change`.
template <class Change>
std::string error_of(Change change) {
  termination_config config;
  change(config);
  auto err = check_config(config);
  if (!err) return "";
  EXPECT_EQ(err, make_error(errc::invalid_config)) << describe(err);
  return describe(err);
}

TEST(config_check, the_defaults_pass) {
  EXPECT_EQ(error_of([](termination_config&) {}), "");
}

TEST(config_check, each_wrong_field_is_named_with_what_is_expected) {
  EXPECT_NE(error_of([](auto& c) { c.grace_period = -1ms; }).find("grace_period must be >= 0"),
            std::string::npos);
  EXPECT_NE(error_of([](auto& c) {
              c.signals = {"SIGTERM", "SIGKILL"};
            }).find("unknown signal 'SIGKILL' (known: SIGTERM, "),
            std::string::npos);
  for (int code : {0, 1, 2, 3, 256})
    EXPECT_NE(error_of([code](auto& c) { c.restart_code = code; })
                  .find("restart_code must be an exit code in [4, 255] (0 is a job done, 1 what "
                        "Python exits with on an uncaught exception, 2 a configuration that cannot "
                        "work, 3 a failure), got " +
                        std::to_string(code)),
              std::string::npos)
        << code;
  EXPECT_NE(error_of([](auto& c) { c.poll_interval = 0ms; }).find("poll_interval must be > 0"),
            std::string::npos);
  for (double factor : {0.5, std::nan(""), std::numeric_limits<double>::infinity()})
    EXPECT_NE(error_of([factor](auto& c) {
                c.safety_factor = factor;
              }).find("safety_factor must be a finite number >= 1, got "),
              std::string::npos)
        << factor;
  EXPECT_NE(error_of([](auto& c) { c.max_to_keep = 0; }).find("max_to_keep must be >= 1, got 0"),
            std::string::npos);
  EXPECT_NE(
      error_of([](auto& c) { c.save_every_steps = -1; }).find("save_every_steps must be >= 0"),
      std::string::npos);
  EXPECT_NE(
      error_of([](auto& c) { c.save_every_seconds = -1s; }).find("save_every_seconds must be >= 0"),
      std::string::npos);
  EXPECT_EQ(error_of([](auto& c) { c.heartbeat_timeout = 0ms; }),
            "invalid_config: heartbeat_timeout must be at least 100 ms, got 0 ms");
  EXPECT_EQ(error_of([](auto& c) { c.heartbeat_timeout = 99ms; }),
            "invalid_config: heartbeat_timeout must be at least 100 ms, got 99 ms");
  EXPECT_NE(error_of([](auto& c) { c.hang_timeout = -1ms; }).find("hang_timeout must be >= 0"),
            std::string::npos);
}

TEST(config_check, edges_that_are_allowed_pass) {
  EXPECT_EQ(error_of([](auto& c) {
              c.grace_period = 0ms;
              c.signals = {"TERM", "SIGUSR1", "10"};
              c.restart_code = 255;
              c.safety_factor = 1.0;
              c.max_to_keep = 1;
              c.hang_timeout = 0ms;
              c.heartbeat_timeout = 100ms;
            }),
            "");
}

}  // namespace
}  // namespace lifeboat
