// command_line: an integer flag reads its whole text in decimal within its
// range (CLI11 alone reads "010" as 8), a flag given twice takes its last
// value, and a bad command line or --help ends with their codes.
#include "apps/command_line.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace lifeboat::apps {
namespace {

// Parses `args` (after the program name) with an app that has --count in
// [1, 100] and --port in [0, 65535]; `count` and `port` get the values.
std::optional<int> parse(std::vector<std::string> args, int& count, int& port) {
  CLI::App app{"test", "command_line_test"};
  configure_app(app, "usage: command_line_test [--count N] [--port P]\n");
  add_integer(app, "--count", count, 1, 100, "how many");
  add_integer(app, "--port", port, 0, 65535, "where");
  args.insert(args.begin(), "command_line_test");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return parse_command_line(app, static_cast<int>(argv.size()), argv.data());
}

TEST(command_line, an_integer_is_read_in_decimal_whatever_its_leading_zeros) {
  int count = 0, port = -1;
  EXPECT_FALSE(parse({"--count", "010", "--port", "08080"}, count, port));
  EXPECT_EQ(count, 10);
  EXPECT_EQ(port, 8080);
}

TEST(command_line, hex_signs_spaces_and_out_of_range_are_usage_errors) {
  for (auto text :
       {"0x10", "1e1", " 5", "5 ", "", "101", "0", "-1", "+5", "99999999999999999999"}) {
    int count = 7, port = 0;
    EXPECT_EQ(parse({"--count", text}, count, port), usage_exit_code) << "'" << text << "'";
    EXPECT_EQ(count, 7) << "'" << text << "'";
  }
}

TEST(command_line, a_flag_given_twice_takes_its_last_value_and_an_absent_one_keeps_its_own) {
  int count = 0, port = 1234;
  EXPECT_FALSE(parse({"--count", "2", "--count", "3"}, count, port));
  EXPECT_EQ(count, 3);
  EXPECT_EQ(port, 1234);
}

TEST(command_line, help_ends_with_zero_and_an_unknown_flag_with_the_usage_code) {
  int count = 0, port = 0;
  testing::internal::CaptureStdout();
  EXPECT_EQ(parse({"--help"}, count, port), 0);
  auto help = testing::internal::GetCapturedStdout();
  EXPECT_NE(help.find("usage: command_line_test [--count N]"), std::string::npos) << help;
  EXPECT_NE(help.find("--count INT:[1, 100]"), std::string::npos) << help;
  testing::internal::CaptureStderr();
  EXPECT_EQ(parse({"--counts", "2"}, count, port), usage_exit_code);
  auto error = testing::internal::GetCapturedStderr();
  EXPECT_NE(error.find("command_line_test: "), std::string::npos) << error;
}

}  // namespace
}  // namespace lifeboat::apps
