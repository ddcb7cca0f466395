#include "platform/signal_names.hpp"

#include <csignal>
#include <cstdlib>
#include <cstring>

namespace lifeboat {

namespace {

struct named_signal {
  const char* name;
  int number;
};

constexpr named_signal catchable_signals[] = {
    {"SIGTERM", SIGTERM}, {"SIGINT", SIGINT},   {"SIGHUP", SIGHUP},   {"SIGQUIT", SIGQUIT},
    {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}, {"SIGXCPU", SIGXCPU}, {"SIGPWR", SIGPWR},
};

}  // namespace

std::optional<int> signal_number(const std::string& name) {
  if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos) {
    auto number = std::atoi(name.c_str());
    for (auto& s : catchable_signals)
      if (s.number == number) return number;
    return std::nullopt;
  }
  auto full = name.compare(0, 3, "SIG") == 0 ? name : "SIG" + name;
  for (auto& s : catchable_signals)
    if (full == s.name) return s.number;
  return std::nullopt;
}

std::string signal_name(int number) {
  for (auto& s : catchable_signals)
    if (s.number == number) return s.name;
  // What ended a worker may be any signal (SIGKILL, SIGSEGV, ...).
  if (const char* abbrev = ::sigabbrev_np(number)) return std::string{"SIG"} + abbrev;
  return "signal " + std::to_string(number);
}

std::string known_signal_names() {
  std::string out;
  for (auto& s : catchable_signals) {
    if (!out.empty()) out += ", ";
    out += s.name;
  }
  return out;
}

}  // namespace lifeboat
