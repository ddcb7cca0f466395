#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/error.hpp>

#include "actors/coordination/tls_config.hpp"

namespace lifeboat::sim {

/// Raises this process's soft limit on open files to the hard one: every
/// simulated worker holds a socket, and a process hosting many of them (or
/// the service they all connect to) needs more than the usual 1024. The
/// error says what the limit stays at when it cannot.
caf::error raise_fd_limit();

/// How the simulated workers reach the coordination service.
struct worker_options {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  int32_t world_size = 1;
  std::string token;
  uint32_t incarnation = 0;
  std::chrono::milliseconds heartbeat_interval{1000};
  std::chrono::milliseconds join_timeout{60000};
  /// TLS on the workers' connections, as the service has it.
  tls_config tls;
};

/// What the workers of a group learned and when (steady_clock, ns: the clock
/// is system-wide on Linux, so times of different processes compare).
/// Thread-safe: the recorders write from the I/O thread, the caller waits.
class board {
 public:
  explicit board(size_t workers);

  void commit_seen(size_t index, int64_t at_ns);
  void failure_seen(size_t index, int32_t rank, bool lost, int64_t at_ns);
  void barrier_done(size_t index, int64_t entry_ns, int64_t exit_ns, bool ok);

  /// Forgets the commits, failures and barriers seen so far.
  void clear();

  /// Forgets the barriers seen so far (before the next one starts).
  void clear_barriers();

  /// Waits until every worker but `except` saw a commit / a failure of
  /// `rank` (with `lost` as given) / the end of its barrier; the latest
  /// time one did, or nullopt at the timeout (or a barrier failed).
  std::optional<int64_t> await_commits(size_t except, std::chrono::milliseconds timeout);
  std::optional<int64_t> await_failures(int32_t rank, bool lost, size_t except,
                                        std::chrono::milliseconds timeout);
  struct barrier_times {
    int64_t last_entry_ns = 0;
    int64_t last_exit_ns = 0;
  };
  std::optional<barrier_times> await_barrier(std::chrono::milliseconds timeout);

  /// The failures seen, for an error message: "rank R (lost) by K workers, ...",
  /// and how many saw none.
  std::string failures_seen();

 private:
  struct record {
    int64_t commit_ns = 0;
    int64_t failure_ns = 0;
    int32_t failure_rank = -1;
    bool failure_lost = false;
    int64_t barrier_entry_ns = 0;
    int64_t barrier_exit_ns = 0;
    bool barrier_ok = false;
  };

  std::mutex mtx_;
  std::condition_variable cv_;
  std::vector<record> records_;
  size_t commits_ = 0;
  size_t failures_ = 0;
  size_t barriers_ = 0;
};

/// Many coordination workers in one process, each running the code a real
/// worker runs against the coordination service: its own coordination agent
/// (a TCP connection, the protocol, the join handshake, heartbeats), a step
/// gate, the step resolver and the cluster watcher, all on the one actor
/// system given (one I/O thread and one scheduler thread for every worker,
/// where a real worker has them to itself).
///
/// What differs from a real worker: no trainer thread (the completed step
/// stays 0 and nothing waits at the gate), no checkpoint writer, store or
/// exit controller (an agreement is reached and nothing is saved, nobody
/// exits), no signal or poll watchers (a notice is handed to the resolver
/// directly), no status endpoint and no step sampling by the agent (no step
/// source). A recorder per worker, subscribed to its agent, notes when the
/// worker learned of a commit or a failure.
///
/// Lifetime: destroy the group before its actor system (it holds actor
/// handles). Not thread-safe: one thread drives a group.
class worker_group {
 public:
  worker_group(caf::actor_system& sys, worker_options opts, std::vector<int32_t> ranks);
  ~worker_group();

  worker_group(const worker_group&) = delete;
  worker_group& operator=(const worker_group&) = delete;

  /// Joins every worker, `threads` joins at a time (each join blocks its
  /// thread until the service answered); the first error, if any.
  caf::error join(size_t threads);

  /// Gives every worker a fresh step resolver and cluster watcher (no round
  /// or failure remembered) and clears the board.
  void arm();

  /// Hands a notice to the resolver of `rank` (one of this group's).
  void notice(int32_t rank);

  /// `rank` (one of this group's) reports an error to every worker.
  void report_error(int32_t rank, int32_t code, const std::string& message);

  /// Every worker of the group enters barrier `name` (all ranks take part).
  void enter_barrier(const std::string& name, std::chrono::milliseconds timeout);

  /// Every worker leaves cleanly, `threads` at a time; the first error.
  caf::error leave(size_t threads);

  /// The position of `rank` in this group, or size() when it is not here.
  size_t index_of(int32_t rank) const;
  size_t size() const { return workers_.size(); }
  board& seen() { return board_; }

 private:
  struct worker;

  caf::actor_system& sys_;
  worker_options opts_;
  std::vector<std::unique_ptr<worker>> workers_;
  board board_;
};

}  // namespace lifeboat::sim
