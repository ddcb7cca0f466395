#pragma once

// A child process with pipes to its stdin and stdout, shared by the tests and
// benchmarks that run real processes: they drive workers line by line and wait
// on their output with deadlines, never with sleeps. A child dies with the
// process that started it, even one that crashed or was SIGKILLed: a worker
// left behind would keep training, hold ctest's output pipe open and load
// the host for every later test and measurement. Linux sends the signal when
// the starting thread ends, so start children from a thread that outlives
// them (the test's own thread does).

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace lifeboat::test {

class child_process {
 public:
  /// Starts `argv[0]` with the arguments; stderr is inherited, or read
  /// together with stdout when `merge_stderr`. With `env` the child gets
  /// exactly that environment ("NAME=value" entries) instead of this one's.
  explicit child_process(const std::vector<std::string>& argv, bool merge_stderr = false,
                         const std::optional<std::vector<std::string>>& env = std::nullopt) {
    // Built before fork: the child of a multi-threaded process may only call
    // async-signal-safe functions, and malloc is not one.
    auto args = c_strings(argv);
    std::vector<char*> envp;
    if (env) envp = c_strings(*env);
    int in[2];
    int out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return;
    pid_t parent = getpid();
    pid_ = fork();
    if (pid_ == 0) {
      // The death signal survives exec; a parent gone before it was set
      // (the child is already adopted) is caught by the second check.
      if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
      dup2(in[0], STDIN_FILENO);
      dup2(out[1], STDOUT_FILENO);
      if (merge_stderr) dup2(out[1], STDERR_FILENO);
      if (env)
        execve(args[0], args.data(), envp.data());
      else
        execv(args[0], args.data());
      _exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    to_child_ = in[1];
    from_child_ = out[0];
  }

  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  ~child_process() {
    if (pid_ > 0 && !exit_status_) {
      ::kill(pid_, SIGKILL);
      wait_exit(std::chrono::seconds(10));
    }
    if (to_child_ >= 0) ::close(to_child_);
    if (from_child_ >= 0) ::close(from_child_);
  }

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  /// The read end of the child's stdout, to poll many children at once.
  int output_fd() const { return from_child_; }

  /// Whether the child's stdout reached its end (it exited or closed it).
  bool at_eof() const { return eof_; }

  bool send_line(const std::string& line) {
    auto text = line + "\n";
    return ::write(to_child_, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  }

  /// The next line of the child's stdout, or nullopt at the deadline or at EOF.
  /// With a zero timeout it never waits.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto nl = buf_.find('\n');
      if (nl != std::string::npos) {
        auto line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      // A timeout of zero still takes what the child has already written.
      pollfd pfd{from_child_, POLLIN, 0};
      if (::poll(&pfd, 1, static_cast<int>(std::max<int64_t>(0, left.count()))) <= 0) {
        if (left.count() <= 0) return std::nullopt;
        continue;
      }
      char chunk[4096];
      auto n = ::read(from_child_, chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        eof_ = true;
        return std::nullopt;
      }
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }

  void kill(int sig) { ::kill(pid_, sig); }

  /// The exit status (as waitpid reports it), or nullopt at the deadline.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout) {
    if (exit_status_) return exit_status_;
    // waitpid has no timeout; a pidfd becomes readable when the child exits.
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
    if (pidfd >= 0) {
      pollfd pfd{pidfd, POLLIN, 0};
      ::poll(&pfd, 1, static_cast<int>(timeout.count()));
      ::close(pidfd);
    }
    int status = 0;
    if (::waitpid(pid_, &status, pidfd >= 0 ? WNOHANG : 0) != pid_) return std::nullopt;
    exit_status_ = status;
    return exit_status_;
  }

 private:
  // Pointers into `strings`, null-terminated, as exec wants them.
  static std::vector<char*> c_strings(const std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
    out.push_back(nullptr);
    return out;
  }

  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  std::string buf_;
  bool eof_ = false;
  std::optional<int> exit_status_;
};

/// Whether process `pid` (not necessarily a child of this one) is gone within
/// `deadline`. A pidfd becomes readable when the process exits, so this
/// waits for the event itself instead of polling.
inline bool gone_within(pid_t pid, std::chrono::milliseconds deadline) {
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return errno == ESRCH;
  pollfd pfd{fd, POLLIN, 0};
  bool exited = ::poll(&pfd, 1, static_cast<int>(deadline.count())) == 1;
  ::close(fd);
  return exited;
}

}  // namespace lifeboat::test
