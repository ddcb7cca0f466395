#include "platform/notice_source.hpp"

#include <stdexcept>

#include <gtest/gtest.h>

#include "messages/errors.hpp"
#include "tests/platform/fake_env.hpp"

namespace lifeboat {
namespace {

using namespace std::chrono_literals;

TEST(notice_source, makes_every_known_spec) {
  std::map<std::string, std::string> table;
  for (auto spec : {"gce", "aws", "aws-rebalance", "azure", "file:/tmp/x"}) {
    auto source = make_notice_source(spec, testing::table_env(table));
    ASSERT_TRUE(source) << spec << ": " << describe(source.error());
    EXPECT_EQ((*source)->name(), spec);
  }
}

TEST(notice_source, unknown_spec_lists_the_known_names) {
  auto source = make_notice_source("gcp");
  ASSERT_FALSE(source);
  EXPECT_EQ(source.error(), make_error(errc::invalid_config));
  auto text = describe(source.error());
  for (auto name : {"'gcp'", "gce", "aws", "azure", "file:"})
    EXPECT_NE(text.find(name), std::string::npos) << text;
}

TEST(notice_source, function_source_turns_true_into_a_lasting_notice) {
  bool answer = false;
  auto source = make_function_source([&] { return answer; });
  auto first = source->poll(0ms);
  ASSERT_TRUE(first);
  EXPECT_FALSE(*first);
  answer = true;
  auto second = source->poll(0ms);
  ASSERT_TRUE(second && *second);
  EXPECT_EQ((*second)->source, "termination_watcher_fn");
  EXPECT_EQ((*second)->deadline_unix_ms, 0);
  answer = false;
  auto third = source->poll(0ms);
  ASSERT_TRUE(third && *third);
}

TEST(notice_source, function_source_reports_exceptions_as_errors) {
  auto source = make_function_source([]() -> bool { throw std::runtime_error("boom"); });
  auto polled = source->poll(0ms);
  ASSERT_FALSE(polled);
  EXPECT_NE(describe(polled.error()).find("boom"), std::string::npos);
}

}  // namespace
}  // namespace lifeboat
