#include "platform/child_processes.hpp"

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

namespace lifeboat {

namespace {

// How often the end of a signalled child is checked.
constexpr std::chrono::milliseconds reap_poll{5};

// How many generations of descendants end_child_processes ends, at most: a
// process that forks faster than it is ended must not hold the exit.
constexpr int end_rounds = 8;

// The parent's pid in /proc/<pid>/stat, whose second field (the command, in
// parentheses) may itself hold spaces and parentheses: the fields after the
// last ')' are "state ppid ...".
pid_t parent_of(const std::string& pid) {
  std::ifstream in{"/proc/" + pid + "/stat"};
  std::string stat;
  if (!std::getline(in, stat)) return -1;
  auto close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  char state = 0;
  int ppid = -1;
  if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) != 2) return -1;
  return static_cast<pid_t>(ppid);
}

// Whether `pid` is gone: reaped here, or not this process's child to reap
// (SIGCHLD ignored reaps children at once).
bool reaped(pid_t pid) {
  int status = 0;
  auto rc = ::waitpid(pid, &status, WNOHANG);
  return rc == pid || (rc < 0 && errno == ECHILD);
}

// The children of `pids` not yet reaped once all are, or `bound` passed.
std::vector<pid_t> wait_for(std::vector<pid_t> pids, std::chrono::milliseconds bound) {
  auto deadline = std::chrono::steady_clock::now() + bound;
  for (;;) {
    pids.erase(std::remove_if(pids.begin(), pids.end(), reaped), pids.end());
    if (pids.empty() || std::chrono::steady_clock::now() >= deadline) return pids;
    std::this_thread::sleep_for(reap_poll);
  }
}

}  // namespace

std::vector<pid_t> child_processes() {
  std::vector<pid_t> children;
  auto self = ::getpid();
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return children;
  while (auto* entry = ::readdir(proc)) {
    std::string name = entry->d_name;
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (parent_of(name) == self) children.push_back(static_cast<pid_t>(std::stol(name)));
  }
  ::closedir(proc);
  return children;
}

size_t end_child_processes(std::chrono::milliseconds grace) {
  size_t ended = 0;
  // In a child subreaper (lifeboat-launch) a child that ends hands its own
  // children to this process: each round ends those the last one made ours.
  for (int round = 0; round < end_rounds; ++round) {
    auto children = child_processes();
    if (children.empty()) break;
    for (auto pid : children) ::kill(pid, SIGTERM);
    auto left = wait_for(children, grace);
    for (auto pid : left) ::kill(pid, SIGKILL);
    // Bounded as well: a child in uninterruptible sleep must not hold the exit.
    wait_for(std::move(left), grace);
    ended += children.size();
  }
  return ended;
}

}  // namespace lifeboat
