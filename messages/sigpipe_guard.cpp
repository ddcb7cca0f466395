#include "messages/sigpipe_guard.hpp"

#include <pthread.h>

#include <ctime>

namespace lifeboat {

namespace {

sigset_t pipe_only() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  return set;
}

bool sigpipe_pending() {
  sigset_t pending;
  sigemptyset(&pending);
  return ::sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
}

}  // namespace

sigpipe_guard::sigpipe_guard() {
  auto set = pipe_only();
  ::pthread_sigmask(SIG_BLOCK, &set, &before_);
  pending_before_ = sigpipe_pending();
}

sigpipe_guard::~sigpipe_guard() {
  // A SIGPIPE that a write raised while blocked stays pending on this
  // thread, and would be delivered the moment the mask is restored.
  if (!pending_before_ && sigpipe_pending()) {
    auto set = pipe_only();
    timespec zero{};
    ::sigtimedwait(&set, nullptr, &zero);
  }
  ::pthread_sigmask(SIG_SETMASK, &before_, nullptr);
}

}  // namespace lifeboat
