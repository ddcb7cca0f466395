#pragma once

#include <signal.h>

#include <memory>
#include <vector>

#include <caf/expected.hpp>

namespace lifeboat {

/// Turns POSIX signals into bytes on a local stream socket, one byte (the
/// signal number) per signal. The handler only writes that byte, without
/// blocking (async-signal-safe); whoever watches the socket does the rest.
/// A signal before anyone watches waits in the socket. One per process:
/// installing a second one while the first lives fails (errc::already_exists).
/// Restores the previous handlers when destroyed. In a child forked without exec, which
/// inherits the handler, a signal from the child itself or its parent takes
/// the child's action from before the install, and any other is dropped:
/// only the installing process writes bytes.
class signal_pipe {
 public:
  static caf::expected<std::unique_ptr<signal_pipe>> install(std::vector<int> signals);
  ~signal_pipe();

  signal_pipe(const signal_pipe&) = delete;
  signal_pipe& operator=(const signal_pipe&) = delete;

  /// A descriptor of the reading end that the caller owns and closes (the
  /// socket stays readable after this pipe is gone, and reads end of file
  /// once every byte written before is read).
  caf::expected<int> open_reader() const;

  /// Those of `signals` whose action is no longer a signal pipe's handler:
  /// the process installed another one after it (Python's signal.signal in a
  /// trainer or a library), and such a signal no longer reaches any pipe.
  /// Thread-safe; needs no pipe.
  static std::vector<int> replaced(const std::vector<int>& signals);

  /// Takes those of `signals` that are pending for the whole process, and
  /// returns them: every thread blocked them when they came (lifeboat's
  /// threads block all; the trainer's main thread a pthread_sigmask of its
  /// own), so no handler would ever see them. The caller must block them
  /// itself, or sigpending does not show them. Thread-safe; needs no pipe.
  static std::vector<int> take_blocked_everywhere(const std::vector<int>& signals);

 private:
  signal_pipe() = default;

  std::vector<int> signals_;
  int read_fd_ = -1;
};

/// The set holding exactly `signals`, for sigwait and pthread_sigmask.
sigset_t signal_set(const std::vector<int>& signals);

/// Whether `signo`'s action is to ignore it: an ignored signal stays ignored
/// across exec, which is how `nohup` keeps a job alive when its terminal
/// hangs up (SIGHUP).
bool signal_ignored(int signo);

/// SIGHUP, the signal of a terminal that hung up (an SSH session lost), is a
/// termination notice where it is not ignored (nohup): without a handler it
/// would end the job without a checkpoint.
bool hangup_is_a_notice();

}  // namespace lifeboat
