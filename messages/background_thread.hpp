#pragma once

#include <signal.h>

#include <thread>
#include <utility>

namespace lifeboat {

/// The signals a thread of lifeboat's own never takes: every signal but
/// those the kernel sends to the thread at fault (SIGSEGV, SIGBUS, SIGFPE,
/// SIGILL, SIGTRAP, SIGSYS), SIGABRT, and SIGPIPE (which sigpipe_guard holds
/// off where lifeboat writes).
sigset_t background_thread_blocked_signals();

/// While it lives, the calling thread blocks background_thread_blocked_signals,
/// so every thread it starts meanwhile (std::thread, std::async, a pool's
/// helpers) is one of lifeboat's own and takes no process-directed signal: a
/// notice, SIGINT or SIGHUP lands on a thread of the application (or on
/// CAF's, which worker_actors starts with the notices blocked too). Why:
/// lifeboat's handler turns a signal into a notice from any thread, but once
/// it is closed the signal's default action is back, and a SIGTERM that
/// landed on one of lifeboat's threads still ending then killed a worker
/// that had finished and printed its digest (launch_demo_test, in a
/// fresh-clone CI): its launcher counted the run as failed. An application
/// that holds the signals off its own threads then (lifeboat-demo does, once
/// training is done) keeps them pending until it exits.
///
/// Lifetime: one scope on one thread; the thread's mask is restored after.
class background_threads_block_signals {
 public:
  background_threads_block_signals();
  ~background_threads_block_signals();

  background_threads_block_signals(const background_threads_block_signals&) = delete;
  background_threads_block_signals& operator=(const background_threads_block_signals&) = delete;

 private:
  sigset_t before_;
};

/// Starts `f` on a thread of lifeboat's own (background_threads_block_signals).
template <class F>
std::thread background_thread(F&& f) {
  background_threads_block_signals block;
  return std::thread{std::forward<F>(f)};
}

}  // namespace lifeboat
