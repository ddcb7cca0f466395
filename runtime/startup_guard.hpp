#pragma once

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
///   - a notice signal (one of the signal pipe's) exits with the restart code;
///   - SIGINT (a person stopping the job) exits with the failure code 3;
/// each after one line that says so.
///
/// Lifetime: from before the join until the signal watcher takes the signal
/// pipe over. The destructor stops the guard's thread and gives SIGINT its
/// previous action back; a notice that comes later waits in the signal pipe.
/// One per process; its methods are not thread-safe.
class startup_guard {
 public:
  static caf::expected<std::unique_ptr<startup_guard>> start(const signal_pipe& notices,
                                                             int restart_code);
  ~startup_guard();

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
  struct sigaction previous_sigint_ {};
  std::thread thread_;
};

}  // namespace lifeboat
