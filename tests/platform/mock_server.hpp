#pragma once

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "platform/http_client.hpp"

extern char** environ;

namespace lifeboat::testing {

/// Runs lifeboat-metadata-mock as a child process for the length of a test.
class mock_server {
 public:
  static constexpr std::chrono::milliseconds kStartTimeout{10'000};
  static constexpr std::chrono::milliseconds kControlTimeout{5'000};

  explicit mock_server(std::vector<std::string> flags = {}) {
    int out[2];
    if (::pipe(out) != 0) throw std::runtime_error("pipe failed");
    std::vector<std::string> args{LIFEBOAT_METADATA_MOCK};
    args.insert(args.end(), flags.begin(), flags.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    if (rc != 0) throw std::runtime_error("cannot start " + args[0]);
    port_ = read_port(out[0]);
    ::close(out[0]);
  }

  ~mock_server() {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }

  mock_server(const mock_server&) = delete;
  mock_server& operator=(const mock_server&) = delete;

  uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  /// POST /control/<path> with `body`; throws unless the mock answers 200.
  void control(const std::string& path, const std::string& body = "") const {
    auto reply = send("POST", path, body);
    if (reply.status != 200) throw std::runtime_error("control " + path + " failed");
  }

  /// GET /control/<path>.
  std::string read(const std::string& path) const { return send("GET", path, "").body; }

  /// One counter of GET /control/stats.
  int64_t stat(const std::string& name) const {
    auto text = "\n" + read("stats");
    auto at = text.find("\n" + name + " ");
    if (at == std::string::npos) throw std::runtime_error("no stat " + name);
    return std::atoll(text.c_str() + at + name.size() + 2);
  }

  /// Waits until stat(name) == value, or `timeout` passes; returns whether it did.
  bool wait_for_stat(const std::string& name, int64_t value,
                     std::chrono::milliseconds timeout) const {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (stat(name) != value) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds{5});
    }
    return true;
  }

 private:
  http_response send(const std::string& method, const std::string& path,
                     const std::string& body) const {
    http_request request;
    request.method = method;
    request.host = "127.0.0.1";
    request.port = port_;
    request.target = "/control/" + path;
    request.body = body;
    auto reply = http_send(request, kControlTimeout);
    if (!reply) throw std::runtime_error("control " + path + ": no reply");
    return *reply;
  }

  // Reads "listening on PORT" from the child's stdout, waiting at most kStartTimeout.
  static uint16_t read_port(int fd) {
    std::string line;
    auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
    while (line.find('\n') == std::string::npos) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{fd, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0)
        throw std::runtime_error("metadata mock did not start");
      char buffer[64];
      auto n = ::read(fd, buffer, sizeof(buffer));
      if (n <= 0) throw std::runtime_error("metadata mock exited");
      line.append(buffer, static_cast<size_t>(n));
    }
    constexpr char prefix[] = "listening on ";
    if (line.rfind(prefix, 0) != 0) throw std::runtime_error("unexpected mock output: " + line);
    return static_cast<uint16_t>(std::atoi(line.c_str() + sizeof(prefix) - 1));
  }

  pid_t pid_ = 0;
  uint16_t port_ = 0;
};

}  // namespace lifeboat::testing
