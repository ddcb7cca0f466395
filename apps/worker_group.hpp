#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace lifeboat::apps {

/// How one worker process ended.
struct worker_exit {
  int rank = -1;
  pid_t pid = -1;
  int code = -1;                    // exit code, or -1 when killed by a signal
  int signal = 0;                   // the signal that killed it, or 0
  bool killed_at_deadline = false;  // still running when wait_all's `until` passed
  bool killed_as_lost = false;      // killed by kill_lost: the cluster had declared it lost
  bool killed_unheeded = false;     // killed by kill_unheeded: it outlived a forwarded signal
  /// "was killed by SIGTERM", "exited with code 3", ...
  std::string how() const;
  /// "rank R (pid P) " and how().
  std::string describe() const;
};

/// Whether `e` only followed a failure that began elsewhere: it exited with
/// the failure code 3 (it learnt of a peer's failure) or was killed at
/// wait_all's deadline (it was slow to follow).
bool followed_a_failure(const worker_exit& e);

/// Whether `signo` ended a failed generation that `failures` (ordered by
/// order_by_cause) describe: its likeliest cause was killed by `signo` (or,
/// outliving it, by kill_unheeded), and every other worker was killed so too
/// or only followed.
bool ended_by_signal(const std::vector<worker_exit>& failures, int signo);

/// Whether a failed generation that `failures` (ordered by order_by_cause)
/// describe ended on a configuration that cannot work: its likeliest cause
/// exited with config_exit_code (2), and every other worker did so too or
/// only followed.
bool ended_by_configuration(const std::vector<worker_exit>& failures);

/// Orders the exits of a failed generation by how likely each is its cause,
/// most likely first (stable within each kind): killed by a signal from
/// outside, an exit code of its own, the failure code 3 (a worker that learnt
/// of a failure), killed at the deadline (it was only slow to follow).
void order_by_cause(std::vector<worker_exit>& exits);

/// Starts and reaps one generation of N local worker processes. Every worker
/// dies with the launcher (PR_SET_PDEATHSIG), starts with no signals blocked,
/// and gets `env` plus LIFEBOAT_RANK (node_rank * N + its local rank),
/// LIFEBOAT_LOCAL_RANK, LIFEBOAT_LOCAL_WORLD_SIZE (N), LIFEBOAT_NODE_RANK,
/// LIFEBOAT_RESTART_COUNT, the same as torchrun names them (RANK, LOCAL_RANK,
/// LOCAL_WORLD_SIZE, GROUP_RANK) and, with a `status_port_base`,
/// LIFEBOAT_STATUS_PORT (base + local rank; 0 stays 0).
/// SIGCHLD must be blocked in every thread of the calling process (the group
/// waits for it with sigtimedwait).
class worker_group {
 public:
  /// Makes this process the child subreaper of its workers' descendants: a
  /// process a worker left behind (its child, when the launcher killed it;
  /// a daemon it started) becomes the launcher's, so that start() can end
  /// it. Call once, before the first start. Errors: errno's text.
  static std::optional<std::string> become_subreaper();

  worker_group(std::vector<std::string> command, std::map<std::string, std::string> env,
               std::optional<uint16_t> status_port_base = std::nullopt, int node_rank = 0);

  /// Why `program` (the first word of the workers' command) cannot be run
  /// as start() runs it (execvpe: a name without '/' is looked up in PATH),
  /// as strerror says it ("No such file or directory", "Permission denied");
  /// nothing when it can.
  static std::optional<std::string> unrunnable(const std::string& program);

  /// Starts `n` workers; prints "lifeboat-launch: rank=R pid=PID restart=K"
  /// (R the global rank). From the second generation on, first ends what the
  /// last one's workers left behind (end_left_behind).
  /// Returns an error message when a worker cannot be started.
  std::optional<std::string> start(int n, int restart);

  /// Ends (SIGTERM, then SIGKILL after child_end_grace) the processes the
  /// workers of the last generation started left behind, which the launcher,
  /// a child subreaper, inherited (become_subreaper), and says how many with
  /// "lifeboat-launch: ended N process(es) that the workers of generation G
  /// left behind". Call when no worker is live: every child is then one.
  void end_left_behind();

  /// How many processes the workers left behind still run (those that ended
  /// are reaped first). Call when no worker is live.
  static size_t count_left_behind();

  /// Waits for the first worker to exit (or `until`); nothing when none did.
  std::optional<worker_exit> wait_any(std::chrono::steady_clock::time_point until);

  /// Waits for every remaining worker until `until`, then kills the rest with
  /// SIGKILL and reaps them (their exits say killed_at_deadline). Returns
  /// every exit of this call.
  std::vector<worker_exit> wait_all(std::chrono::steady_clock::time_point until);

  /// Sends `signo` to every live worker.
  void signal_all(int signo);

  /// Kills the live workers of `ranks` with SIGKILL: the coordination service
  /// declared them lost for their silence (stopped, frozen, cut off), their
  /// peers are ending, and such a process would otherwise hold the generation
  /// until wait_all's deadline. Their exits say killed_as_lost.
  void kill_lost(const std::vector<int32_t>& ranks);

  /// Kills every live worker with SIGKILL: none took the signal the
  /// launcher forwarded as a notice, and each outlived it (it ignores the
  /// signal: no lifeboat handler, a shell that traps it). Their exits say
  /// killed_unheeded, and count as ended by that signal (ended_by_signal).
  void kill_unheeded();

  /// Kills every live worker with SIGKILL, and from now on every worker as
  /// soon as start() has started it: a worker being started while this ran
  /// is never missed (a second SIGINT came while a generation started).
  void kill_all();

  bool empty() const;

 private:
  std::optional<worker_exit> reap(bool block_until_one,
                                  std::chrono::steady_clock::time_point until);

  std::vector<std::string> command_;
  std::map<std::string, std::string> env_;
  std::optional<uint16_t> status_port_base_;
  int node_rank_;
  mutable std::mutex mtx_;
  std::map<pid_t, int> live_;      // pid -> global rank
  std::set<pid_t> lost_;           // live workers kill_lost killed
  std::set<pid_t> unheeded_;       // live workers kill_unheeded killed
  bool killing_ = false;           // kill_all was called
  std::optional<int> generation_;  // the last one start() started
};

}  // namespace lifeboat::apps
