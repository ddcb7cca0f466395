#pragma once

#include <sstream>
#include <string>

namespace lifeboat {

enum class log_level { debug, info, warning, error };

/// Sets the rank shown in every log line of this process (-1: none).
void set_log_rank(int rank);

/// Sets the lowest level written; LIFEBOAT_LOG_LEVEL (debug|info|warning|error)
/// overrides the default of `info` at start-up.
void set_log_level(log_level level);

/// Writes one line "lifeboat[rank R] <component>: <text>" to stderr with a single
/// write(2), so lines of concurrent threads and processes never interleave.
void log_line(log_level level, const char* component, const std::string& text);

/// log(level, "component", a, b, c) streams a, b and c into one line.
template <class... Ts>
void log(log_level level, const char* component, const Ts&... xs) {
  std::ostringstream out;
  (out << ... << xs);
  log_line(level, component, out.str());
}

}  // namespace lifeboat
