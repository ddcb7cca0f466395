#include "runtime/startup_guard.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>

#include "actors/preemption/exit_controller.hpp"
#include "messages/background_thread.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "platform/signal_names.hpp"

namespace lifeboat {

namespace {

constexpr const char* component = "runtime";

// The write end of SIGINT's pipe, for the handler (async-signal-safe: one write).
std::atomic<int> interrupt_write_fd{-1};

void on_sigint(int) {
  int saved = errno;
  unsigned char byte = SIGINT;
  int fd = interrupt_write_fd.load();
  if (fd >= 0) [[maybe_unused]]
    auto written = ::write(fd, &byte, 1);
  errno = saved;
}

caf::error os_error(const char* what) {
  return make_error(errc::io_error,
                    std::string{"start-up guard: "} + what + ": " + std::strerror(errno));
}

}  // namespace

caf::expected<std::unique_ptr<startup_guard>> startup_guard::start(const signal_pipe& notices,
                                                                   int restart_code) {
  std::unique_ptr<startup_guard> guard{new startup_guard};
  guard->restart_code_ = restart_code;
  auto reader = notices.open_reader();
  if (!reader) return std::move(reader.error());
  guard->notice_fd_ = *reader;
  guard->stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
  if (guard->stop_fd_ < 0) return os_error("eventfd");
  int interrupt[2];
  if (::pipe2(interrupt, O_CLOEXEC | O_NONBLOCK) != 0) return os_error("pipe");
  guard->interrupt_fd_ = interrupt[0];
  interrupt_write_fd.store(interrupt[1]);
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (::sigaction(SIGINT, &action, &guard->previous_sigint_) != 0) return os_error("sigaction");
  guard->sigint_installed_ = true;
  guard->thread_ = background_thread([g = guard.get()] { g->watch(); });
  return guard;
}

void startup_guard::watch() {
  name_this_thread("lifeboat.start");
  pollfd fds[3] = {{stop_fd_, POLLIN, 0}, {notice_fd_, POLLIN, 0}, {interrupt_fd_, POLLIN, 0}};
  std::optional<std::chrono::steady_clock::time_point> notice_at;
  // Read at every turn: a join after the notice lengthens its grace.
  auto deadline = [&] {
    return *notice_at + (joined_.load() ? joined_notice_grace : notice_grace);
  };
  for (;;) {
    int timeout_ms = -1;
    if (notice_at) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline() - std::chrono::steady_clock::now());
      timeout_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
    }
    int ready = ::poll(fds, 3, timeout_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      log(log_level::error, component, "start-up guard stopped: ", std::strerror(errno));
      return;
    }
    if (fds[0].revents != 0) return;
    unsigned char signal = 0;
    if (fds[2].revents != 0 && ::read(interrupt_fd_, &signal, 1) == 1) {
      log(log_level::error, component,
          "SIGINT while joining the cluster, before any training step: exiting with ",
          failure_exit_code);
      exit_process(failure_exit_code);
    }
    // The signal pipe reads end of file only once it is gone, which the
    // runtime's member order rules out while the guard lives; stop anyway.
    if (fds[1].revents != 0) {
      if (::read(notice_fd_, &signal, 1) != 1) return;
      if (held_notice_ == 0) {
        held_notice_ = signal;
        notice_at = std::chrono::steady_clock::now();
      }
    }
    if (notice_at && std::chrono::steady_clock::now() >= deadline()) {
      log(log_level::warning, component, signal_name(held_notice_),
          " while joining the cluster, before any training step: the latest complete "
          "checkpoint is the state, exiting with the restart code ",
          restart_code_);
      exit_process(restart_code_);
    }
  }
}

startup_guard::~startup_guard() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    [[maybe_unused]] auto written = ::write(stop_fd_, &one, sizeof one);
    thread_.join();
  }
  // The construction ended in time: the signal watcher takes the notice.
  if (held_notice_ != 0) ::kill(::getpid(), held_notice_);
  if (sigint_installed_) ::sigaction(SIGINT, &previous_sigint_, nullptr);
  int write_fd = interrupt_write_fd.exchange(-1);
  for (int fd : {notice_fd_, interrupt_fd_, write_fd, stop_fd_})
    if (fd >= 0) ::close(fd);
}

}  // namespace lifeboat
