// signal_names: the signals a notice may come by, by name or number, and a
// readable name for any signal (what killed a worker).
#include "platform/signal_names.hpp"

#include <csignal>

#include <gtest/gtest.h>

namespace lifeboat {
namespace {

TEST(signal_names, a_notice_signal_is_found_by_its_name_short_name_or_number) {
  EXPECT_EQ(signal_number("SIGTERM"), SIGTERM);
  EXPECT_EQ(signal_number("TERM"), SIGTERM);
  EXPECT_EQ(signal_number("15"), SIGTERM);
  EXPECT_EQ(signal_number("SIGUSR1"), SIGUSR1);
}

TEST(signal_names, signals_that_cannot_be_caught_and_non_signals_are_refused) {
  EXPECT_FALSE(signal_number("SIGKILL"));
  EXPECT_FALSE(signal_number("9"));
  EXPECT_FALSE(signal_number("SIGSTOP"));
  EXPECT_FALSE(signal_number("SIGTERMX"));
  EXPECT_FALSE(signal_number(""));
  EXPECT_FALSE(signal_number("-15"));
}

TEST(signal_names, every_signal_has_a_readable_name) {
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(signal_name(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(signal_name(SIGABRT), "SIGABRT");
  EXPECT_EQ(signal_name(1000), "signal 1000");
}

TEST(signal_names, the_known_names_list_every_notice_signal) {
  auto known = known_signal_names();
  EXPECT_EQ(known.find("SIGTERM"), 0u) << known;
  EXPECT_NE(known.find("SIGPWR"), std::string::npos) << known;
  EXPECT_EQ(known.find("SIGKILL"), std::string::npos) << known;
}

}  // namespace
}  // namespace lifeboat
