// Every app answers --help (and -h) with its usage on stdout and exits 0.

#include <string>

#include <gtest/gtest.h>

#include "tests/apps/app_test_support.hpp"

namespace {

using namespace lifeboat::test;

TEST(help_test, every_app_prints_its_usage_and_exits_0) {
  for (const char* app : {LIFEBOAT_LAUNCH, LIFEBOAT_DEMO, LIFEBOAT_COORDINATOR, LIFEBOAT_STATUS}) {
    for (const char* flag : {"--help", "-h"}) {
      child_process run{{app, flag}};
      output_log log{run};
      log.read_all();
      EXPECT_EQ(exit_code(run), 0) << app << " " << flag << "\n" << log.text();
      ASSERT_FALSE(log.lines().empty()) << app << " " << flag;
      EXPECT_NE(log.text().find("usage: "), std::string::npos) << app << "\n" << log.text();
    }
  }
}

}  // namespace
