#include "tests/checkpoint/test_support.hpp"

#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "checkpoint/file_io.hpp"
#include "checkpoint/memory_tier.hpp"

namespace lifeboat::checkpoint::testing {

temp_dir::temp_dir() {
  char tmpl[] = "/tmp/lifeboat-ckpt-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
  // Tests that drop privileges must be able to walk into it.
  ::chmod(path_.c_str(), 0755);
}

temp_dir::~temp_dir() {
  (void)remove_tree(path_);
  // A tier made in the default root for a checkpoint directory in it.
  (void)remove_orphaned_memory_tiers_in(default_memory_root);
}

void fill_pattern(char* data, std::size_t size, uint64_t seed) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (std::size_t i = 0; i < size; ++i) {
    // xorshift64: cheap, deterministic, different for every seed.
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    data[i] = static_cast<char>(x);
  }
}

std::vector<char> pattern(std::size_t size, uint64_t seed) {
  std::vector<char> out(size);
  fill_pattern(out.data(), size, seed);
  return out;
}

pid_t spawn(const std::vector<std::string>& argv, const std::vector<int>& fds, int stdout_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdout_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stdout_fd, STDOUT_FILENO);
  for (size_t i = 0; i < fds.size(); ++i)
    posix_spawn_file_actions_adddup2(&actions, fds[i], 3 + static_cast<int>(i));
  std::vector<char*> args;
  for (auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  auto rc = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("posix_spawn " + argv[0] + " failed");
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string read_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out{path, std::ios::binary | std::ios::trunc};
  out << bytes;
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool flip_byte(const std::string& path, uint64_t offset) {
  std::fstream f{path, std::ios::in | std::ios::out | std::ios::binary};
  f.seekg(static_cast<std::streamoff>(offset));
  auto byte = static_cast<char>(f.get() ^ 0x5a);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(byte);
  return f.good();
}

}  // namespace lifeboat::checkpoint::testing
