#include "messages/background_thread.hpp"

namespace lifeboat {

sigset_t background_thread_blocked_signals() {
  sigset_t set;
  sigfillset(&set);
  for (int sent_at_fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT, SIGPIPE})
    sigdelset(&set, sent_at_fault);
  return set;
}

background_threads_block_signals::background_threads_block_signals() {
  auto blocked = background_thread_blocked_signals();
  pthread_sigmask(SIG_BLOCK, &blocked, &before_);
}

background_threads_block_signals::~background_threads_block_signals() {
  pthread_sigmask(SIG_SETMASK, &before_, nullptr);
}

}  // namespace lifeboat
