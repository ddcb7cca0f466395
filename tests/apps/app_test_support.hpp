#pragma once

// What every end-to-end test of the apps needs: run lifeboat-launch (or the
// apps directly) as real processes, read their merged output line by line
// with deadlines, and pick out the contract lines of DESIGN.md
// ("lifeboat-launch: rank=R pid=PID restart=K",
// "lifeboat-demo: rank=R step=N digest=HEX").
//
// The contract lines are parsed with sscanf, not std::regex: GCC 12 warns
// inside std::regex when built with the sanitizers.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/memory_tier.hpp"
#include "tests/support/child_process.hpp"

namespace lifeboat::test {

using namespace std::chrono_literals;

/// The exit codes of DESIGN.md "Exit codes".
constexpr int restart_exit_code = 42;
constexpr int failure_exit_code = 3;

/// A single line of output may take this long: start-up of a worker on a
/// loaded 2-core machine, or a whole group's checkpoint and exit.
constexpr std::chrono::milliseconds line_deadline = 60s;
/// A whole run (training, preemption, restart) ends within this bound.
constexpr std::chrono::milliseconds run_deadline = 120s;
/// Processes that should be gone (their launcher has exited) go within this.
constexpr std::chrono::milliseconds orphan_deadline = 10s;

/// What a worker's status endpoint logs once it listens, before the port;
/// the launcher's own line has no "[rank R]" before "status_endpoint:".
constexpr const char* worker_status_listening =
    "] status_endpoint: status endpoint listening on 127.0.0.1:";

/// This process's environment with `changes` applied (an empty value blanks
/// a variable, which lifeboat reads as unset), for child_process's `env`.
inline std::vector<std::string> environment_with(
    const std::map<std::string, std::string>& changes) {
  std::vector<std::string> out;
  for (const auto& [name, value] : changes) out.push_back(name + "=" + value);
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    if (changes.count(entry.substr(0, entry.find('='))) == 0) out.push_back(entry);
  }
  return out;
}

/// The variables of rank `rank` of `world_size` workers joining a service
/// that another process hosts (lifeboat-coordinator, a test's listener) on
/// 127.0.0.1:`port` with `token`; a test adds its own to them.
inline std::map<std::string, std::string> external_service_worker(int rank, int world_size,
                                                                  uint16_t port,
                                                                  const std::string& token) {
  return {{"LIFEBOAT_RANK", std::to_string(rank)},
          {"LIFEBOAT_WORLD_SIZE", std::to_string(world_size)},
          {"LIFEBOAT_COORDINATOR", "127.0.0.1:" + std::to_string(port)},
          {"LIFEBOAT_COORDINATOR_EXTERNAL", "1"},
          {"LIFEBOAT_CLUSTER_TOKEN", token}};
}

/// A scratch directory under the system's temporary directory, removed with
/// everything in it when it goes out of scope, and with the memory tiers of
/// the jobs whose checkpoint directory was in it. Never a static one: that
/// cleanup uses objects that static destruction may already have ended.
class scratch_dir {
 public:
  explicit scratch_dir(const std::string& what)
      : path_(std::filesystem::temp_directory_path() /
              ("lifeboat-" + what + "-" + std::to_string(::getpid()) + "-" +
               std::to_string(counter_++))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~scratch_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
    // A job in it that exited with the restart code kept its memory tier.
    (void)checkpoint::remove_orphaned_memory_tiers_in(checkpoint::default_memory_root);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
  static inline int counter_ = 0;
};

/// Everything one process wrote (stdout and stderr merged), kept for the
/// failure messages and the checks after the run.
class output_log {
 public:
  explicit output_log(child_process& p) : p_(p) {}

  /// Reads until a line contains `needle`; returns it, or nothing at EOF or
  /// after `deadline` without one.
  std::optional<std::string> read_until(const std::string& needle,
                                        std::chrono::milliseconds deadline = line_deadline) {
    return read_until([&](const std::string& l) { return l.find(needle) != std::string::npos; },
                      deadline);
  }

  std::optional<std::string> read_until(const std::function<bool(const std::string&)>& match,
                                        std::chrono::milliseconds deadline = line_deadline) {
    auto until = std::chrono::steady_clock::now() + deadline;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      if (left.count() < 0) return std::nullopt;
      auto line = p_.read_line(left);
      if (!line) return std::nullopt;
      lines_.push_back(*line);
      if (match(*line)) return line;
    }
  }

  /// Reads until `count` lines contained `needle` (those already read count).
  bool read_until_count(const std::string& needle, int count,
                        std::chrono::milliseconds deadline = line_deadline) {
    auto until = std::chrono::steady_clock::now() + deadline;
    while (this->count(needle) < count) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      if (left.count() < 0 || !read_until(needle, left)) return false;
    }
    return true;
  }

  /// Reads whatever arrives until `deadline` passes (or EOF): for a random
  /// moment that does not hold the child's output back meanwhile.
  void read_for(std::chrono::milliseconds deadline) {
    read_until([](const std::string&) { return false; }, deadline);
  }

  /// Reads to EOF (every writer of the pipe exited) or `deadline`.
  void read_all(std::chrono::milliseconds deadline = run_deadline) {
    read_until([](const std::string&) { return false; }, deadline);
  }

  /// How many lines read so far `match` holds for.
  int count_if(const std::function<bool(const std::string&)>& match) const {
    return static_cast<int>(std::count_if(lines_.begin(), lines_.end(), match));
  }

  int count(const std::string& needle) const {
    return count_if([&](const std::string& l) { return l.find(needle) != std::string::npos; });
  }

  bool contains(const std::string& needle) const { return count(needle) > 0; }

  const std::vector<std::string>& lines() const { return lines_; }

  std::string text() const {
    std::string out;
    for (const auto& l : lines_) out += l + "\n";
    return out;
  }

  /// rank -> digest of "lifeboat-demo: rank=R step=<steps> digest=HEX".
  std::map<int, std::string> digests(int64_t steps) const {
    std::map<int, std::string> out;
    for (const auto& l : lines_) {
      int rank = 0;
      long long step = 0;
      char digest[65] = {};
      auto at = l.find("lifeboat-demo: rank=");
      if (at != std::string::npos &&
          std::sscanf(l.c_str() + at, "lifeboat-demo: rank=%d step=%lld digest=%64[0-9a-f]", &rank,
                      &step, digest) == 3 &&
          step == steps)
        out[rank] = digest;
    }
    return out;
  }

  /// rank -> pid of "lifeboat-launch: rank=R pid=PID restart=<restart>".
  std::map<int, pid_t> pids(int restart) const {
    std::map<int, pid_t> out;
    for (const auto& l : lines_) {
      int rank = 0;
      int pid = 0;
      int generation = 0;
      if (std::sscanf(l.c_str(), "lifeboat-launch: rank=%d pid=%d restart=%d", &rank, &pid,
                      &generation) == 3 &&
          generation == restart)
        out[rank] = static_cast<pid_t>(pid);
    }
    return out;
  }

  /// Every N of "agreed to save at step N", one per worker that logged it.
  std::vector<long long> agreed_steps() const {
    std::vector<long long> out;
    constexpr char marker[] = "agreed to save at step ";
    for (const auto& l : lines_) {
      auto at = l.find(marker);
      long long step = 0;
      if (at != std::string::npos &&
          std::sscanf(l.c_str() + at + sizeof(marker) - 1, "%lld", &step) == 1)
        out.push_back(step);
    }
    return out;
  }

 private:
  child_process& p_;
  std::vector<std::string> lines_;
};

/// The exit code of `p`, or -1 when it was killed by a signal or did not
/// exit within `deadline`.
inline int exit_code(child_process& p, std::chrono::milliseconds deadline = run_deadline) {
  auto status = p.wait_exit(deadline);
  if (!status || !WIFEXITED(*status)) return -1;
  return WEXITSTATUS(*status);
}

/// "127.0.0.1:PORT" of a line ending in "listening on 127.0.0.1:PORT" or
/// "listening on port PORT"; 0 when the line has neither.
inline uint16_t listening_port(const std::string& line) {
  for (const char* marker : {"listening on 127.0.0.1:", "listening on port "}) {
    auto at = line.find(marker);
    if (at != std::string::npos)
      return static_cast<uint16_t>(std::atoi(line.c_str() + at + std::strlen(marker)));
  }
  return 0;
}

/// Demo steps no test reaches: such a run trains until the test ends it.
constexpr int64_t endless_steps = 1'000'000;

/// A lifeboat-demo worker (the binary `demo`) that trains `steps` steps of
/// `step_ms` with 1 MiB of state, saving under `checkpoint_dir`.
inline std::vector<std::string> demo_command(const std::string& demo,
                                             const std::string& checkpoint_dir, int64_t steps,
                                             int step_ms) {
  return {demo,      "--checkpoint-dir",    checkpoint_dir,
          "--steps", std::to_string(steps), "--state-mb",
          "1",       "--step-ms",           std::to_string(step_ms)};
}

/// A lifeboat-demo worker that trains until the test ends it (10 ms steps).
inline std::vector<std::string> endless_demo_command(const std::string& demo,
                                                     const std::string& checkpoint_dir) {
  return demo_command(demo, checkpoint_dir, endless_steps, 10);
}

}  // namespace lifeboat::test
