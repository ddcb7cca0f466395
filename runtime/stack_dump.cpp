#include "runtime/stack_dump.hpp"

#include <execinfo.h>
#include <semaphore.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "lifeboat/handler.hpp"
#include "messages/errors.hpp"

namespace lifeboat {

namespace {

// Frames written at most: enough to reach the trainer's own code from a
// library's wait.
constexpr int max_frames = 64;
// Posted by the handler once the stack is written (sem_post is async-signal-safe).
sem_t written;

void write_stack(int) {
  int saved = errno;
  constexpr char header[] = "lifeboat: native stack of the training thread:\n";
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, header, sizeof header - 1);
  void* frames[max_frames];
  int depth = ::backtrace(frames, max_frames);
  ::backtrace_symbols_fd(frames, depth, STDERR_FILENO);
  ::sem_post(&written);
  errno = saved;
}

}  // namespace

// A real-time signal a trainer is unlikely to use (SIGRTMIN itself and the
// two before it belong to the C library's threads).
int stack_dump_signal() { return SIGRTMIN + 8; }

caf::expected<std::unique_ptr<stack_dumper>> stack_dumper::install_for_this_thread() {
  std::unique_ptr<stack_dumper> dumper{new stack_dumper};
  dumper->thread_ = ::pthread_self();
  // backtrace loads libgcc on its first call, which allocates: never first
  // in the handler.
  void* warm[1];
  ::backtrace(warm, 1);
  ::sem_init(&written, 0, 0);
  struct sigaction action {};
  action.sa_handler = write_stack;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (::sigaction(stack_dump_signal(), &action, &dumper->previous_) != 0)
    return make_error(errc::io_error,
                      std::string{"stack dumps: sigaction: "} + std::strerror(errno));
  return dumper;
}

stack_dumper::~stack_dumper() { ::sigaction(stack_dump_signal(), &previous_, nullptr); }

void stack_dumper::dump(std::chrono::milliseconds bound) {
  if (::pthread_kill(thread_, stack_dump_signal()) != 0) return;
  timespec until{};
  ::clock_gettime(CLOCK_REALTIME, &until);
  auto ns = until.tv_nsec + std::chrono::nanoseconds{bound}.count();
  until.tv_sec += static_cast<time_t>(ns / 1'000'000'000);
  until.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  while (::sem_timedwait(&written, &until) != 0 && errno == EINTR) {
  }
}

}  // namespace lifeboat
