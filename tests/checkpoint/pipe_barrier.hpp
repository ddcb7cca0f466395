#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/barrier.hpp"

namespace lifeboat::checkpoint::testing {

// A barrier between processes over pipes, for tests: each worker writes
// "arrive NAME" to the harness and waits for "go NAME"; the harness (the hub)
// decides when to release, so a test can hold the barrier open and look at
// the directory meanwhile.

/// Reads newline-terminated lines from a file descriptor, with a deadline.
class line_reader {
 public:
  explicit line_reader(int fd) : fd_(fd) {}

  /// The next line, or nothing at the deadline or end of file.
  std::optional<std::string> next(std::chrono::milliseconds timeout);

 private:
  int fd_;
  std::string buffered_;
};

bool write_line(int fd, const std::string& line);

/// The worker side: implements the store's barrier interface.
class pipe_barrier : public barrier {
 public:
  pipe_barrier(int from_hub, int to_hub) : from_hub_(from_hub), to_hub_(to_hub) {}

  caf::error arrive_and_wait(const std::string& name, std::chrono::milliseconds timeout) override;

  /// Blocks until the hub sends "start" (used to hold a worker back).
  bool await_start(std::chrono::milliseconds timeout);

 private:
  line_reader from_hub_;
  int to_hub_;
};

/// The harness side: one pair of pipes per worker.
class pipe_barrier_hub {
 public:
  struct worker_pipes {
    int from_worker;
    int to_worker;
  };

  explicit pipe_barrier_hub(std::vector<worker_pipes> workers);

  /// Waits for `rank` to arrive at `name`.
  bool await_arrival(int rank, const std::string& name, std::chrono::milliseconds timeout);

  void release(const std::string& name);
  void start(int rank);

 private:
  std::vector<worker_pipes> workers_;
  std::vector<line_reader> readers_;
};

}  // namespace lifeboat::checkpoint::testing
