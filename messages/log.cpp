#include "messages/log.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <utility>

#include "messages/sigpipe_guard.hpp"

namespace lifeboat {

namespace {

std::atomic<int> log_rank{-1};

log_level initial_level() {
  const char* env = std::getenv("LIFEBOAT_LOG_LEVEL");
  if (env == nullptr || *env == '\0') return log_level::info;
  if (auto level = parse_log_level(env)) return *level;
  // A typo ("warn") must not pass for the default unseen. Written directly:
  // log_line would ask for the level being decided here.
  write_stderr_line(std::string{"lifeboat log: warning: LIFEBOAT_LOG_LEVEL='"} + env +
                    "' is none of debug, info, warning, error: logging at info");
  return log_level::info;
}

std::atomic<log_level>& min_level() {
  static std::atomic<log_level> level{initial_level()};
  return level;
}

const char* prefix(log_level level) {
  switch (level) {
    case log_level::debug:
      return "debug: ";
    case log_level::warning:
      return "warning: ";
    case log_level::error:
      return "error: ";
    case log_level::info:
      break;
  }
  return "";
}

}  // namespace

void set_log_rank(int rank) { log_rank = rank; }

void name_this_thread(const char* name) { ::pthread_setname_np(::pthread_self(), name); }

void set_log_level(log_level level) { min_level() = level; }

std::optional<log_level> parse_log_level(std::string_view name) {
  if (name == "debug") return log_level::debug;
  if (name == "info") return log_level::info;
  if (name == "warning") return log_level::warning;
  if (name == "error") return log_level::error;
  return std::nullopt;
}

bool log_enabled(log_level level) { return level >= min_level().load(); }

void log_line(log_level level, const char* component, const std::string& text) {
  if (!log_enabled(level)) return;
  std::string line = "lifeboat";
  if (auto rank = log_rank.load(); rank >= 0) line += "[rank " + std::to_string(rank) + "]";
  line += " ";
  line += component;
  line += ": ";
  line += prefix(level);
  line += text;
  write_stderr_line(std::move(line));
}

void write_stderr_line(std::string line) {
  line += '\n';
  // A stderr whose reader went away drops the line; it never ends the process.
  sigpipe_guard guard;
  // One write(2) per line: lines from several threads or processes never interleave.
  auto rc = ::write(STDERR_FILENO, line.data(), line.size());
  (void)rc;
}

}  // namespace lifeboat
