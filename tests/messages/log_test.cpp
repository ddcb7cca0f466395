#include "messages/log.hpp"

#include <pthread.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>

namespace lifeboat {
namespace {

TEST(log, writes_one_prefixed_line_to_stderr) {
  set_log_rank(3);
  testing::internal::CaptureStderr();
  log(log_level::warning, "checkpoint_writer", "saved ", 42, " bytes");
  auto out = testing::internal::GetCapturedStderr();
  EXPECT_EQ(out, "lifeboat[rank 3] checkpoint_writer: warning: saved 42 bytes\n");
  set_log_rank(-1);
}

// A program's own lines (lifeboat-launch's) go out whole, whatever its
// threads log at the same time, and whatever the log level.
TEST(log, own_lines_and_log_lines_of_other_threads_never_cut_each_other) {
  constexpr int lines_per_thread = 200;
  const std::string own = "lifeboat-launch: rank 1 (pid 42) " + std::string(200, 'x');
  set_log_level(log_level::error);
  testing::internal::CaptureStderr();
  std::thread logger{[] {
    for (int i = 0; i < lines_per_thread; ++i)
      log(log_level::error, "coordination_service", "rank 2 lost: ", std::string(200, 'y'));
  }};
  for (int i = 0; i < lines_per_thread; ++i) write_stderr_line(streamed(own));
  logger.join();
  auto out = testing::internal::GetCapturedStderr();
  set_log_level(log_level::info);
  const std::string theirs =
      "lifeboat coordination_service: error: rank 2 lost: " + std::string(200, 'y');
  int ours = 0;
  int logged = 0;
  std::istringstream lines{out};
  for (std::string line; std::getline(lines, line);) {
    ours += line == own;
    logged += line == theirs;
    EXPECT_TRUE(line == own || line == theirs) << line;
  }
  EXPECT_EQ(ours, lines_per_thread);
  EXPECT_EQ(logged, lines_per_thread);
}

// Counts how often a line formatted it.
struct counted {
  int* formatted;
};

std::ostream& operator<<(std::ostream& out, const counted& c) {
  ++*c.formatted;
  return out << "counted";
}

TEST(log, formats_every_argument_as_a_stream_would) {
  const char* none = nullptr;
  std::string text = "text";
  int formatted = 0;
  testing::internal::CaptureStderr();
  log(log_level::info, "c", -42, " ", std::size_t{18446744073709551615u}, " ", int8_t{65}, 'b', " ",
      true, " ", 0.75, " ", 1.0 / 3, " ", 1e20, " ", none, text, " ", std::string_view{"sv"}, " ",
      std::filesystem::path{"/a b"}, " ", counted{&formatted});
  auto out = testing::internal::GetCapturedStderr();
  std::ostringstream expected;
  expected << -42 << " " << std::size_t{18446744073709551615u} << " " << int8_t{65} << 'b' << " "
           << true << " " << 0.75 << " " << 1.0 / 3 << " " << 1e20 << " " << text << " "
           << std::string_view{"sv"} << " " << std::filesystem::path{"/a b"} << " counted";
  EXPECT_EQ(out, "lifeboat c: " + expected.str() + "\n");
  EXPECT_EQ(out,
            "lifeboat c: -42 18446744073709551615 Ab 1 0.75 0.333333 1e+20 text sv \"/a b\" "
            "counted\n");
  EXPECT_EQ(formatted, 1);
}

TEST(log, drops_lines_below_the_level_unformatted) {
  int formatted = 0;
  set_log_level(log_level::warning);
  testing::internal::CaptureStderr();
  log(log_level::info, "x", counted{&formatted});
  log(log_level::error, "x", counted{&formatted});
  auto out = testing::internal::GetCapturedStderr();
  set_log_level(log_level::info);
  EXPECT_EQ(out, "lifeboat x: error: counted\n");
  EXPECT_EQ(formatted, 1);
  EXPECT_FALSE(log_enabled(log_level::debug));
  EXPECT_TRUE(log_enabled(log_level::info));
}

TEST(log, a_level_is_named_exactly_and_anything_else_names_none) {
  EXPECT_EQ(parse_log_level("debug"), log_level::debug);
  EXPECT_EQ(parse_log_level("info"), log_level::info);
  EXPECT_EQ(parse_log_level("warning"), log_level::warning);
  EXPECT_EQ(parse_log_level("error"), log_level::error);
  for (auto name : {"warn", "DEBUG", "loud", "", " info", "info "})
    EXPECT_EQ(parse_log_level(name), std::nullopt) << "'" << name << "'";
}

TEST(log, names_the_calling_thread_only) {
  char main_name[16] = {};
  ASSERT_EQ(::pthread_getname_np(::pthread_self(), main_name, sizeof(main_name)), 0);
  char named[16] = {};
  std::thread{[&] {
    name_this_thread("lifeboat.test");
    ::pthread_getname_np(::pthread_self(), named, sizeof(named));
  }}.join();
  EXPECT_STREQ(named, "lifeboat.test");
  char after[16] = {};
  ASSERT_EQ(::pthread_getname_np(::pthread_self(), after, sizeof(after)), 0);
  EXPECT_STREQ(after, main_name);
}

}  // namespace
}  // namespace lifeboat
