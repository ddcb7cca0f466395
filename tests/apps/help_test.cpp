// Every app answers --help (and -h) with its usage on stdout and exits 0.

#include <string>

#include <gtest/gtest.h>

#include "tests/apps/app_test_support.hpp"
#include "tests/support/build_tree.hpp"

namespace {

using namespace lifeboat::test;

TEST(help_test, every_app_prints_its_usage_and_exits_0) {
  for (const std::string& app :
       {lifeboat::test::built(LIFEBOAT_LAUNCH), lifeboat::test::built(LIFEBOAT_DEMO),
        lifeboat::test::built(LIFEBOAT_COORDINATOR), lifeboat::test::built(LIFEBOAT_STATUS),
        lifeboat::test::built(LIFEBOAT_CHECKPOINT)}) {
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
