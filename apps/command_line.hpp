#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "messages/errors.hpp"

namespace lifeboat::apps {

/// How every app ends after a bad command line.
constexpr int usage_exit_code = config_exit_code;

/// Gives `app`, before any flag is added, the conventions of lifeboat's apps:
/// the help shows `synopsis` first (its "usage: " lines), then each flag with
/// its meaning and default, then `footer`; a flag given twice takes its last
/// value (a wrapper script may append to a command line it was handed).
void configure_app(CLI::App& app, std::string synopsis, std::string footer = {});

/// The transform of an integer flag (Option::transform): the whole text in
/// decimal within [min, max], rewritten as the number it reads, so that CLI11,
/// which would read "010" as octal and "0x10" as hex, converts that number.
CLI::Validator integer_in(int64_t min, int64_t max);

/// Adds the integer flag `name` (e.g. "--nproc") bound to `value` (which it
/// keeps when the flag is absent), read with integer_in(min, max).
template <class T>
CLI::Option* add_integer(CLI::App& app, const std::string& name, T& value, int64_t min, int64_t max,
                         const std::string& meaning) {
  return app.add_option(name, value, meaning)->transform(integer_in(min, max));
}

/// Parses argv[1..argc) with `app`. Nothing: go on. Otherwise the code to exit
/// with at once: 0 after --help or -h (the help on stdout), usage_exit_code
/// after a bad command line (reported as usage_error does).
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv);

/// A usage error found after parsing: "<app>: <error>" and the synopsis on
/// stderr. Returns usage_exit_code.
int usage_error(const CLI::App& app, const std::string& error);

}  // namespace lifeboat::apps
