#include "platform/signal_pipe.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <map>

#include "messages/errors.hpp"

namespace lifeboat {

namespace {

// The write end of the pipe, read by the async-signal-safe handler.
std::atomic<int> signal_write_fd{-1};

// Sent through the pipe to stop the reader thread; never a signal number.
constexpr unsigned char stop_byte = 0;

std::map<int, struct sigaction>& previous_actions() {
  static std::map<int, struct sigaction> actions;
  return actions;
}

extern "C" void on_os_signal(int signo) {
  int saved_errno = errno;
  unsigned char byte = static_cast<unsigned char>(signo);
  if (auto fd = signal_write_fd.load(); fd >= 0) {
    auto rc = ::write(fd, &byte, 1);
    (void)rc;
  }
  errno = saved_errno;
}

}  // namespace

caf::expected<std::unique_ptr<signal_pipe>> signal_pipe::install(
    std::vector<int> signals, std::function<void(int)> on_signal) {
  if (signal_write_fd.load() >= 0)
    return make_error(errc::invalid_config, "a signal watcher is already installed");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return make_error(errc::io_error, std::string{"pipe2: "} + std::strerror(errno));
  std::unique_ptr<signal_pipe> result{new signal_pipe};
  result->signals_ = std::move(signals);
  result->on_signal_ = std::move(on_signal);
  result->read_fd_ = fds[0];
  signal_write_fd = fds[1];
  for (auto signo : result->signals_) {
    struct sigaction action {};
    action.sa_handler = on_os_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    struct sigaction previous {};
    ::sigaction(signo, &action, &previous);
    previous_actions()[signo] = previous;
  }
  result->reader_ = std::thread{[p = result.get()] { p->read_loop(); }};
  return result;
}

void signal_pipe::read_loop() {
  unsigned char byte = 0;
  for (;;) {
    auto n = ::read(read_fd_, &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || byte == stop_byte) return;
    on_signal_(byte);
  }
}

signal_pipe::~signal_pipe() {
  for (auto signo : signals_) {
    auto& actions = previous_actions();
    ::sigaction(signo, &actions[signo], nullptr);
    actions.erase(signo);
  }
  auto write_fd = signal_write_fd.exchange(-1);
  auto rc = ::write(write_fd, &stop_byte, 1);
  (void)rc;
  reader_.join();
  ::close(write_fd);
  ::close(read_fd_);
}

}  // namespace lifeboat
