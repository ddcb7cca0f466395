#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include <caf/expected.hpp>

#include "platform/signal_pipe.hpp"

namespace lifeboat {

/// Ends the process when a signal comes while the handler is being
/// constructed. Joining the cluster and agreeing on the checkpoint to restore
/// wait for peers for up to minutes, and a launcher (torchrun above all) that
/// stops a job with SIGTERM would otherwise have to SIGKILL its workers. No
/// training step has run since the restore then, so the latest complete
/// checkpoint is the whole state and nothing is lost:
///   - SIGINT (a person stopping the job) exits with the failure code 3 at once;
///   - a notice signal (one of the signal pipe's) exits with the restart code
///     unless the construction ends in time: notice_grace while the worker
///     has not joined (it may be waiting for a service that never comes),
///     joined_notice_grace once it has (it waits for peers that are starting
///     too; well within torchrun's 30 s before SIGKILL). Then the guard
///     raises the notice again, and the cluster saves for it as for any
///     notice (one worker's notice during the start must not fail its peers,
///     which a worker gone from the restore agreement would);
/// each exit after one line that says so.
///
/// Lifetime: from before the join until the signal watcher takes the signal
/// pipe over. The destructor stops the guard's thread and gives SIGINT its
/// previous action back; a notice that comes later waits in the signal pipe.
/// One per process; its methods are not thread-safe.
class startup_guard {
 public:
  static constexpr std::chrono::milliseconds notice_grace{500};
  static constexpr std::chrono::milliseconds joined_notice_grace{10000};

  static caf::expected<std::unique_ptr<startup_guard>> start(const signal_pipe& notices,
                                                             int restart_code);
  ~startup_guard();

  /// The worker joined the cluster: a notice may wait joined_notice_grace.
  void joined() { joined_.store(true); }

  startup_guard(const startup_guard&) = delete;
  startup_guard& operator=(const startup_guard&) = delete;

 private:
  startup_guard() = default;
  void watch();

  int restart_code_ = 0;
  int notice_fd_ = -1;     // a reader of the signal pipe
  int interrupt_fd_ = -1;  // the read end of SIGINT's pipe
  int stop_fd_ = -1;       // an eventfd: the destructor's word to stop
  bool sigint_installed_ = false;
  int held_notice_ = 0;  // a notice read and not acted on: raised again at the end
  std::atomic<bool> joined_{false};
  struct sigaction previous_sigint_ {};
  std::thread thread_;
};

}  // namespace lifeboat
