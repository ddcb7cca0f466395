#pragma once

#include <charconv>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>

namespace lifeboat {

enum class log_level { debug, info, warning, error };

/// Sets the rank shown in every log line of this process (-1: none).
void set_log_rank(int rank);

/// Names the calling thread (Linux keeps 15 characters), so that top -H,
/// ps -L and /proc/PID/task tell lifeboat's threads from the trainer's.
void name_this_thread(const char* name);

/// Sets the lowest level written; LIFEBOAT_LOG_LEVEL (debug|info|warning|error)
/// overrides the default of `info` at start-up. Any other value leaves it at
/// `info` and says so in one warning line, at the first line logged.
void set_log_level(log_level level);

/// The level that `name` (debug, info, warning, error) names; none for
/// anything else.
std::optional<log_level> parse_log_level(std::string_view name);

/// Whether a line of `level` is written at all.
bool log_enabled(log_level level);

/// Writes one line "lifeboat[rank R] <component>: <text>" to stderr with a single
/// write(2), so lines of concurrent threads and processes never interleave.
void log_line(log_level level, const char* component, const std::string& text);

/// Writes `line` and a newline to stderr with a single write(2), as log_line
/// does: a program's own lines never interleave with its threads' log lines.
/// A stderr that nobody reads any more drops the line (sigpipe_guard).
void write_stderr_line(std::string line);

namespace detail {

// Appends x as `std::ostream << x` would write it. Text and integers go in
// directly: an ostringstream builds a locale and its facets each time, and the
// agreed-step line of every worker is on the way of the agreement. Anything
// else (floating point, types with their own operator<<) still goes through
// a stream, so every line reads as before.
template <class T>
void append_streamed(std::string& out, const T& x) {
  if constexpr (std::is_same_v<T, const char*> || std::is_same_v<T, char*>) {
    if (x != nullptr) out.append(x);  // a stream writes nothing for a null one
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    out.append(std::string_view{x});
  } else if constexpr (std::is_same_v<T, char> || std::is_same_v<T, signed char> ||
                       std::is_same_v<T, unsigned char>) {
    out.push_back(static_cast<char>(x));
  } else if constexpr (std::is_same_v<T, bool>) {
    out.push_back(x ? '1' : '0');
  } else if constexpr (std::is_integral_v<T>) {
    char buf[24];
    auto end = std::to_chars(buf, buf + sizeof(buf), x).ptr;
    out.append(buf, end);
  } else {
    std::ostringstream s;
    s << x;
    out.append(s.str());
  }
}

}  // namespace detail

/// a, b and c written into one string, as an ostream would write them.
template <class... Ts>
std::string streamed(const Ts&... xs) {
  std::string text;
  (detail::append_streamed(text, xs), ...);
  return text;
}

/// log(level, "component", a, b, c) writes a, b and c into one line, as an
/// ostream would; nothing is formatted for a line below the level.
template <class... Ts>
void log(log_level level, const char* component, const Ts&... xs) {
  if (!log_enabled(level)) return;
  log_line(level, component, streamed(xs...));
}

}  // namespace lifeboat
