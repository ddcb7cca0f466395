#include "apps/worker_group.hpp"

#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "messages/errors.hpp"
#include "messages/log.hpp"
#include "platform/child_processes.hpp"
#include "platform/signal_names.hpp"
#include "platform/signal_pipe.hpp"

namespace lifeboat::apps {

std::string worker_exit::how() const {
  if (killed_at_deadline) return "did not exit in time and was killed";
  if (killed_as_lost) return "was lost and killed";
  if (killed_unheeded) return "outlived the signal it was sent and was killed";
  if (signal != 0) return "was killed by " + signal_name(signal);
  return "exited with code " + std::to_string(code);
}

std::string worker_exit::describe() const {
  return "rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + ") " + how();
}

namespace {

// Exit order says little: a worker killed from outside closes its connection
// before it is a zombie, so its peers can exit 3 (a peer was lost) and be
// reaped before it.
int cause_order(const worker_exit& e) {
  if (e.killed_at_deadline) return 3;
  if (e.signal != 0) return 0;
  return e.code == failure_exit_code ? 2 : 1;
}

// Why `path` cannot be executed (an errno value; 0: it can). A directory
// cannot, as execve says (EACCES), though access() lets root search it.
int exec_error(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errno;
  if (S_ISDIR(st.st_mode)) return EACCES;
  return ::access(path.c_str(), X_OK) == 0 ? 0 : errno;
}

// Whether `cause` ended a failed generation: its likeliest cause (the front
// of `failures`, ordered by order_by_cause) is one, and every other worker
// is one too or only followed.
template <class Cause>
bool ended_by(const std::vector<worker_exit>& failures, Cause cause) {
  return !failures.empty() && cause(failures.front()) &&
         std::all_of(failures.begin(), failures.end(),
                     [&](const worker_exit& e) { return cause(e) || followed_a_failure(e); });
}

}  // namespace

bool followed_a_failure(const worker_exit& e) {
  return e.killed_at_deadline || (e.signal == 0 && e.code == failure_exit_code);
}

bool ended_by_signal(const std::vector<worker_exit>& failures, int signo) {
  return ended_by(failures, [&](const worker_exit& e) {
    return e.killed_unheeded || (!e.killed_at_deadline && !e.killed_as_lost && e.signal == signo);
  });
}

bool ended_by_configuration(const std::vector<worker_exit>& failures) {
  return ended_by(failures,
                  [](const worker_exit& e) { return e.signal == 0 && e.code == config_exit_code; });
}

void order_by_cause(std::vector<worker_exit>& exits) {
  std::stable_sort(exits.begin(), exits.end(), [](const worker_exit& a, const worker_exit& b) {
    return cause_order(a) < cause_order(b);
  });
}

worker_group::worker_group(std::vector<std::string> command, std::map<std::string, std::string> env,
                           std::optional<uint16_t> status_port_base, int node_rank)
    : command_(std::move(command)),
      env_(std::move(env)),
      status_port_base_(status_port_base),
      node_rank_(node_rank) {}

std::optional<std::string> worker_group::unrunnable(const std::string& program) {
  int err = ENOENT;
  if (program.find('/') != std::string::npos) {
    err = exec_error(program);
  } else if (!program.empty()) {
    // As execvpe searches: each directory of PATH in turn (an empty one is
    // the working directory); a file found but not executable is the error
    // unless a later directory has one that is.
    const char* path = std::getenv("PATH");
    std::string dirs = path != nullptr ? path : "/bin:/usr/bin";
    for (size_t begin = 0;;) {
      auto end = dirs.find(':', begin);
      auto dir = dirs.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
      auto found = exec_error((dir.empty() ? "." : dir) + "/" + program);
      if (found == 0) return std::nullopt;
      if (found != ENOENT && found != ENOTDIR) err = found;
      if (end == std::string::npos) break;
      begin = end + 1;
    }
  }
  if (err == 0) return std::nullopt;
  return std::string{std::strerror(err)};
}

std::optional<std::string> worker_group::become_subreaper() {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0) return std::nullopt;
  return std::string{"prctl(PR_SET_CHILD_SUBREAPER): "} + std::strerror(errno);
}

void worker_group::end_left_behind() {
  if (!generation_) return;
  if (auto ended = end_child_processes(); ended > 0)
    write_stderr_line("lifeboat-launch: ended " + std::to_string(ended) +
                      " process(es) that the workers of generation " +
                      std::to_string(*generation_) + " left behind");
}

size_t worker_group::count_left_behind() {
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  return child_processes().size();
}

std::optional<std::string> worker_group::start(int n, int restart) {
  // What the last generation left behind may hold what the next one needs:
  // a DataLoader or pool worker of a worker that was killed kept its parent's
  // listening sockets (gloo's port: `Address already in use`) and its GPU
  // memory. The workers themselves are reaped by now: every child left is one.
  end_left_behind();
  generation_ = restart;
  auto launcher = ::getpid();
  for (int local_rank = 0; local_rank < n; ++local_rank) {
    auto rank = node_rank_ * n + local_rank;
    auto env = env_;
    env["LIFEBOAT_RANK"] = std::to_string(rank);
    env["LIFEBOAT_LOCAL_RANK"] = std::to_string(local_rank);
    env["LIFEBOAT_LOCAL_WORLD_SIZE"] = std::to_string(n);
    env["LIFEBOAT_NODE_RANK"] = std::to_string(node_rank_);
    env["LIFEBOAT_RESTART_COUNT"] = std::to_string(restart);
    // As torchrun sets them, for trainers written for it (torch's env://
    // rendezvous reads RANK, and trainers LOCAL_RANK for their device).
    env["RANK"] = env["LIFEBOAT_RANK"];
    env["LOCAL_RANK"] = env["LIFEBOAT_LOCAL_RANK"];
    env["LOCAL_WORLD_SIZE"] = env["LIFEBOAT_LOCAL_WORLD_SIZE"];
    env["GROUP_RANK"] = env["LIFEBOAT_NODE_RANK"];
    // Base 0 asks every worker to pick a free port (it logs the one it got);
    // otherwise each worker of this node gets its own fixed port, the same in
    // every generation (ports are per node, so the local rank picks it).
    if (status_port_base_)
      env["LIFEBOAT_STATUS_PORT"] =
          std::to_string(*status_port_base_ == 0 ? 0 : *status_port_base_ + local_rank);
    // Everything the child needs is prepared before fork: after it, only
    // async-signal-safe calls until exec.
    std::vector<std::string> env_strings;
    for (auto& [key, value] : env) env_strings.push_back(key + "=" + value);
    for (char** e = environ; *e != nullptr; ++e) {
      std::string entry = *e;
      if (env.count(entry.substr(0, entry.find('='))) == 0) env_strings.push_back(entry);
    }
    std::vector<char*> envp, argv;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    for (auto& s : command_) argv.push_back(const_cast<char*>(s.c_str()));
    argv.push_back(nullptr);
    auto pid = ::fork();
    if (pid < 0) return std::string{"fork: "} + std::strerror(errno);
    if (pid == 0) {
      // A worker must never outlive its launcher, even one killed by SIGKILL.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != launcher) ::_exit(127);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      // An ignored signal stays ignored across exec: a launcher started in
      // the background of a script (which ignores SIGINT there) would forward
      // a SIGINT that no worker takes, and wait for them forever.
      for (int forwarded : {SIGINT, SIGTERM}) ::signal(forwarded, SIG_DFL);
      ::execvpe(argv[0], argv.data(), envp.data());
      ::dprintf(STDERR_FILENO, "lifeboat-launch: cannot run '%s': %s\n", argv[0],
                std::strerror(errno));
      ::_exit(127);
    }
    {
      std::lock_guard<std::mutex> guard{mtx_};
      live_[pid] = rank;
      if (killing_) ::kill(pid, SIGKILL);
    }
    write_stderr_line("lifeboat-launch: rank=" + std::to_string(rank) +
                      " pid=" + std::to_string(pid) + " restart=" + std::to_string(restart));
  }
  return std::nullopt;
}

std::optional<worker_exit> worker_group::reap(bool block_until_one,
                                              std::chrono::steady_clock::time_point until) {
  for (;;) {
    int status = 0;
    auto pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      std::lock_guard<std::mutex> guard{mtx_};
      auto i = live_.find(pid);
      if (i == live_.end()) continue;
      worker_exit out{i->second, pid, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                      WIFSIGNALED(status) ? WTERMSIG(status) : 0};
      // A worker that ended on its own before the kill landed says how.
      out.killed_as_lost = lost_.erase(pid) > 0 && out.signal == SIGKILL;
      out.killed_unheeded = unheeded_.erase(pid) > 0 && out.signal == SIGKILL;
      live_.erase(i);
      return out;
    }
    if (!block_until_one || empty()) return std::nullopt;
    auto left = until - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return std::nullopt;
    // Sleep until a child changes state (SIGCHLD is blocked, so it stays
    // pending for sigtimedwait) or the deadline passes.
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    timespec timeout{static_cast<time_t>(ns / 1'000'000'000),
                     static_cast<long>(ns % 1'000'000'000)};
    auto chld = signal_set({SIGCHLD});
    ::sigtimedwait(&chld, nullptr, &timeout);
  }
}

std::optional<worker_exit> worker_group::wait_any(std::chrono::steady_clock::time_point until) {
  return reap(true, until);
}

std::vector<worker_exit> worker_group::wait_all(std::chrono::steady_clock::time_point until) {
  std::vector<worker_exit> exits;
  while (auto e = reap(true, until)) exits.push_back(*e);
  if (!empty()) {
    signal_all(SIGKILL);
    while (auto e = reap(true, std::chrono::steady_clock::time_point::max())) {
      e->killed_at_deadline = true;
      exits.push_back(*e);
    }
  }
  return exits;
}

void worker_group::signal_all(int signo) {
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto& [pid, rank] : live_) ::kill(pid, signo);
}

void worker_group::kill_lost(const std::vector<int32_t>& ranks) {
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto& [pid, rank] : live_)
    if (std::find(ranks.begin(), ranks.end(), rank) != ranks.end() && lost_.insert(pid).second)
      ::kill(pid, SIGKILL);
}

void worker_group::kill_unheeded() {
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto& [pid, rank] : live_)
    if (unheeded_.insert(pid).second) ::kill(pid, SIGKILL);
}

void worker_group::kill_all() {
  std::lock_guard<std::mutex> guard{mtx_};
  killing_ = true;
  for (auto& [pid, rank] : live_) ::kill(pid, SIGKILL);
}

bool worker_group::empty() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return live_.empty();
}

}  // namespace lifeboat::apps
