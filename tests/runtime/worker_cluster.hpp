#pragma once

// A group of runtime_test_worker processes forming one lifeboat cluster on
// 127.0.0.1 (or one worker in local mode), and what the tests read from them:
// every line of each worker's stdout and stderr (lifeboat's log), its exit
// code, and the checkpoint directory they share.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/child_process.hpp"

namespace lifeboat::test {

using namespace std::chrono_literals;

constexpr int restart_exit_code = 42;
constexpr int failure_exit_code = 3;
constexpr int config_exit_code = 2;
// Generous bounds for one event and for a whole run: the tests share two
// cores with other builds and may run under the sanitizers. A healthy run
// takes a small fraction of them.
constexpr auto event_timeout = 30s;
constexpr auto run_timeout = 60s;

/// A directory of its own under the temp directory, removed on destruction.
class temp_dir {
 public:
  explicit temp_dir(const std::string& name);
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

/// Steps of the committed checkpoints (a step directory holding a MANIFEST) in `dir`, ascending.
std::vector<int64_t> committed_steps(const std::filesystem::path& dir);

/// Names of the entries directly in `dir` (none if it does not exist), sorted.
std::vector<std::string> entries(const std::filesystem::path& dir);

int64_t unix_now_ms();

/// The integer after "key=" when `line` starts with it.
std::optional<int64_t> value_of(const std::string& line, const std::string& key);

/// The integer after " field=" anywhere in `line`.
std::optional<int64_t> field_of(const std::string& line, const std::string& field);

struct cluster_options {
  /// 0: one worker in local mode (no LIFEBOAT_* cluster variables at all).
  int world_size = 4;
  std::string checkpoint_dir;
  /// Arguments for every worker (--checkpoint-dir is added).
  std::vector<std::string> args;
  /// LIFEBOAT_RESTART_COUNT: which start of the job this is.
  int incarnation = 0;
  /// "NAME=value" entries added to (or replacing in) every worker's environment.
  std::vector<std::string> extra_env;
  /// Ranks 0..started-1 are started (-1: every rank); the others never join.
  int started = -1;
  /// The worker executable (empty: runtime_test_worker).
  std::string worker;
  /// A command that starts each worker, given the worker's command line
  /// (empty: the worker is started directly).
  std::vector<std::string> launcher;
};

/// `world_size` workers (0: local mode) sharing `dir`, each started with `args`.
cluster_options make_options(int world_size, const std::string& dir, std::vector<std::string> args,
                             int incarnation = 0);

class worker_cluster {
 public:
  /// Starts the workers with a fresh port and token.
  explicit worker_cluster(cluster_options opts);

  int size() const { return static_cast<int>(workers_.size()); }
  child_process& worker(int rank) { return *workers_[rank]; }

  /// Reads every worker's output until `pred(rank, line)` holds for one of
  /// the lines read so far (now or by earlier calls), or until the timeout or
  /// every worker's EOF. Returns whether it held.
  bool wait_for(const std::function<bool(int, const std::string&)>& pred,
                std::chrono::milliseconds timeout = event_timeout);

  /// Waits for a line of `rank` starting with `prefix`; returns it.
  std::optional<std::string> wait_line(int rank, const std::string& prefix,
                                       std::chrono::milliseconds timeout = event_timeout);

  /// Waits until `rank` reported "step=N" with N >= step.
  bool wait_step(int rank, int64_t step, std::chrono::milliseconds timeout = event_timeout);

  /// Reads until every worker closed its output, then reaps them. Returns the
  /// exit codes by rank (128 + signal when killed, -1 when still running).
  std::vector<int> finish(std::chrono::milliseconds timeout = run_timeout);

  /// Every line `rank` wrote so far, stdout and lifeboat's log together.
  const std::vector<std::string>& lines(int rank) const { return lines_[rank]; }

  /// The values of the lines of `rank` that start with "key=", in order.
  std::vector<int64_t> values(int rank, const std::string& key) const;

  /// The lines of `rank` that contain `text`.
  std::vector<std::string> lines_containing(int rank, const std::string& text) const;

  /// All output, for failure messages.
  std::string transcript() const;

  /// The workers' environment (as `opts` made it) for rank `rank`.
  static std::vector<std::string> environment(const cluster_options& opts, int rank, uint16_t port,
                                              const std::string& token);

 private:
  // Reads what is there from every worker within `timeout`; true when all are at EOF.
  bool pump(std::chrono::milliseconds timeout);
  bool all_eof() const;

  std::vector<std::unique_ptr<child_process>> workers_;
  std::vector<std::vector<std::string>> lines_;
};

}  // namespace lifeboat::test
