#pragma once

#include <signal.h>

namespace lifeboat {

/// Holds SIGPIPE off the calling thread while it lives, so that a write to a
/// pipe or socket whose reader went away (write(2), sendfile(2)) fails with
/// EPIPE instead of raising SIGPIPE. Why: SIGPIPE's default action ends the
/// process, and lifeboat runs inside a trainer's process (and is the whole
/// of a launcher's) whatever the program made of SIGPIPE. A job whose output
/// went through `| tee log` lost its launcher, and with it every worker and
/// the steps since the last checkpoint, when `tee` ended before the job.
/// A SIGPIPE raised meanwhile is taken back before the thread's mask is
/// restored, unless one was pending before.
///
/// Lifetime: one scope on one thread. Thread-safety: it changes the calling
/// thread's signal mask only.
class sigpipe_guard {
 public:
  sigpipe_guard();
  ~sigpipe_guard();

  sigpipe_guard(const sigpipe_guard&) = delete;
  sigpipe_guard& operator=(const sigpipe_guard&) = delete;

 private:
  sigset_t before_;
  bool pending_before_ = false;
};

}  // namespace lifeboat
