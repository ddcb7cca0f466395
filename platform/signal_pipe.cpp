#include "platform/signal_pipe.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>

#include "messages/errors.hpp"

namespace lifeboat {

namespace {

// The write end of the socket, read by the async-signal-safe handler.
std::atomic<int> signal_write_fd{-1};

// The process that installed the pipe, and the actions it replaced: both
// read by the handler, so plain storage rather than a map.
std::atomic<pid_t> installing_pid{0};
struct sigaction previous_actions[NSIG];

// A child forked without exec (a multiprocessing.Pool or DataLoader worker)
// inherits this handler and the socket, and its signals are not the
// worker's notices. One the child sent itself or got from its parent (a
// pool's or DataLoader's terminate()) takes the action the child had before
// lifeboat: the handler puts it back and raises the signal again. Without
// that, Pool.terminate()'s SIGTERM neither ended the child (the join then
// hung) nor stayed in it (the parent read a notice, saved and exited with the
// restart code). Any other sender signals more than the child (a scheduler
// signals every process of the job, a terminal its whole group): the worker
// gets a signal of its own, and the child keeps serving it while it saves.
bool ends_a_forked_child(const siginfo_t* info) {
  bool sent_by_a_process =
      info->si_code == SI_USER || info->si_code == SI_QUEUE || info->si_code == SI_TKILL;
  return sent_by_a_process && (info->si_pid == ::getpid() || info->si_pid == ::getppid());
}

// The write never blocks: with the socket full (thousands of signals nobody
// read) this one is dropped, and the ones before it still stand.
extern "C" void on_os_signal(int signo, siginfo_t* info, void*) {
  int saved_errno = errno;
  if (::getpid() != installing_pid.load()) {
    if (ends_a_forked_child(info)) {
      // Unblocked first, so the signal is taken now: the mask that returning
      // from here restores may block it (a child waiting in sigsuspend).
      ::sigaction(signo, &previous_actions[signo], nullptr);
      sigset_t just_this;
      sigemptyset(&just_this);
      sigaddset(&just_this, signo);
      ::sigprocmask(SIG_UNBLOCK, &just_this, nullptr);
      ::raise(signo);
    }
    errno = saved_errno;
    return;
  }
  unsigned char byte = static_cast<unsigned char>(signo);
  if (auto fd = signal_write_fd.load(); fd >= 0) {
    auto rc = ::send(fd, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    (void)rc;
  }
  errno = saved_errno;
}

caf::error system_error(const char* what) {
  return make_error(errc::io_error, std::string{what} + ": " + std::strerror(errno));
}

}  // namespace

caf::expected<std::unique_ptr<signal_pipe>> signal_pipe::install(std::vector<int> signals) {
  if (signal_write_fd.load() >= 0)
    return make_error(errc::already_exists, "a signal watcher is already installed");
  for (auto signo : signals)
    if (signo < 1 || signo >= NSIG)
      return make_error(errc::invalid_config, "no signal numbered " + std::to_string(signo));
  // A socket rather than a pipe: the middleman's I/O loop reads it like any
  // connection, so a signal wakes that one thread and no relay thread.
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    return system_error("socketpair");
  std::unique_ptr<signal_pipe> result{new signal_pipe};
  result->signals_ = std::move(signals);
  result->read_fd_ = fds[0];
  signal_write_fd = fds[1];
  installing_pid = ::getpid();
  for (auto signo : result->signals_) {
    struct sigaction action {};
    action.sa_sigaction = on_os_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART | SA_SIGINFO;
    ::sigaction(signo, nullptr, &previous_actions[signo]);
    ::sigaction(signo, &action, nullptr);
  }
  return result;
}

caf::expected<int> signal_pipe::open_reader() const {
  int fd = ::fcntl(read_fd_, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return system_error("dup of the signal socket");
  return fd;
}

std::vector<int> signal_pipe::replaced(const std::vector<int>& signals) {
  std::vector<int> out;
  for (auto signo : signals) {
    struct sigaction current {};
    if (::sigaction(signo, nullptr, &current) != 0) continue;
    if ((current.sa_flags & SA_SIGINFO) == 0 || current.sa_sigaction != on_os_signal)
      out.push_back(signo);
  }
  return out;
}

std::vector<int> signal_pipe::take_blocked_everywhere(const std::vector<int>& signals) {
  std::vector<int> out;
  sigset_t pending;
  if (::sigpending(&pending) != 0) return out;
  for (auto signo : signals) {
    if (::sigismember(&pending, signo) != 1) continue;
    sigset_t one;
    ::sigemptyset(&one);
    ::sigaddset(&one, signo);
    // Without waiting: another thread that unblocked it meanwhile may have
    // taken it first.
    timespec none{};
    if (::sigtimedwait(&one, nullptr, &none) == signo) out.push_back(signo);
  }
  return out;
}

signal_pipe::~signal_pipe() {
  for (auto signo : signals_) ::sigaction(signo, &previous_actions[signo], nullptr);
  ::close(signal_write_fd.exchange(-1));
  ::close(read_fd_);
}

sigset_t signal_set(const std::vector<int>& signals) {
  sigset_t set;
  sigemptyset(&set);
  for (auto signo : signals) sigaddset(&set, signo);
  return set;
}

bool signal_ignored(int signo) {
  struct sigaction current {};
  return ::sigaction(signo, nullptr, &current) == 0 && current.sa_handler == SIG_IGN;
}

bool hangup_is_a_notice() { return !signal_ignored(SIGHUP); }

}  // namespace lifeboat
