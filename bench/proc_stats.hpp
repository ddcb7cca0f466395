#pragma once

// What the benchmarks read about processes and samples: times on the steady
// clock (system-wide on Linux, so times of different processes compare), a
// process's resident memory and CPU time from /proc, percentiles.

#include <dirent.h>
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace lifeboat::bench {

struct bench_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline int64_t parse_ns(const std::string& text) {
  try {
    return std::stoll(text);
  } catch (const std::exception&) {
    throw bench_error("not a time: '" + text + "'");
  }
}

/// The rest of a child's answer line `word REST`, or nullopt when the line
/// does not start with `word` (the benchmarks drive their children by lines).
inline std::optional<std::string> answer_after(const std::string& line, const std::string& word) {
  if (line.compare(0, word.size(), word) != 0) return std::nullopt;
  return line.substr(std::min(line.size(), word.size() + 1));
}

/// A measuring window (what happens in it is what is measured).
inline void wait_for(std::chrono::milliseconds window) { std::this_thread::sleep_for(window); }

/// A field of /proc/PID/status in KiB (VmRSS, VmHWM), 0 when unreadable.
inline double status_kib(pid_t pid, const std::string& field = "VmRSS") {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/status"};
  for (std::string line; std::getline(in, line);)
    if (line.compare(0, field.size() + 1, field + ":") == 0)
      return std::stod(line.substr(field.size() + 1));
  return 0;
}

inline double rss_kib(pid_t pid) { return status_kib(pid); }

/// The names of a process's threads (/proc/PID/task/*/comm).
inline std::vector<std::string> thread_names(pid_t pid) {
  std::vector<std::string> names;
  auto dir = "/proc/" + std::to_string(pid) + "/task";
  if (auto* d = ::opendir(dir.c_str())) {
    while (auto* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream in{dir + "/" + e->d_name + "/comm"};
      std::string name;
      std::getline(in, name);
      names.push_back(name);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

/// CPU time of all of a process's threads so far, in ns (schedstat: exact,
/// where /proc/PID/stat counts clock ticks).
inline int64_t cpu_ns(pid_t pid) {
  int64_t total = 0;
  auto dir = "/proc/" + std::to_string(pid) + "/task";
  if (auto* d = ::opendir(dir.c_str())) {
    while (auto* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream in{dir + "/" + e->d_name + "/schedstat"};
      int64_t ns = 0;
      if (in >> ns) total += ns;
    }
    ::closedir(d);
  }
  return total;
}

/// Nearest-rank percentile, p in (0, 1].
inline double percentile(std::vector<double> xs, double p) {
  if (xs.empty()) return 0.0;
  std::sort(xs.begin(), xs.end());
  auto rank = static_cast<size_t>(p * static_cast<double>(xs.size()) + 0.999999);
  return xs[std::clamp<size_t>(rank, 1, xs.size()) - 1];
}

}  // namespace lifeboat::bench
