#pragma once

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <memory>

#include <caf/expected.hpp>

namespace lifeboat {

/// Writes the native stack of one thread (the training thread) to stderr on
/// demand, so that a person sees where a hung rank is stuck. The thread is
/// sent stack_dump_signal() and writes its own stack from the handler
/// (backtrace_symbols_fd: no allocation there). Python's faulthandler,
/// registered on the same signal with chain=True (the Python module does),
/// writes every Python thread's stack first and then calls this handler.
///
/// Lifetime: install() replaces the signal's action, the destructor gives the
/// previous one back. One per process; dump() may be called from any thread.
class stack_dumper {
 public:
  /// The calling thread is the one whose stack dump() writes.
  static caf::expected<std::unique_ptr<stack_dumper>> install_for_this_thread();
  ~stack_dumper();

  stack_dumper(const stack_dumper&) = delete;
  stack_dumper& operator=(const stack_dumper&) = delete;

  /// Signals the thread and waits up to `bound` for its stack to be written
  /// (a thread that cannot take the signal writes nothing).
  void dump(std::chrono::milliseconds bound);

 private:
  stack_dumper() = default;

  pthread_t thread_{};
  struct sigaction previous_ {};
};

}  // namespace lifeboat
