#pragma once

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "platform/http_client.hpp"
#include "tests/support/build_tree.hpp"
#include "tests/support/child_process.hpp"

namespace lifeboat::testing {

/// Runs lifeboat-metadata-mock as a child process for the length of a test.
class mock_server {
 public:
  static constexpr std::chrono::milliseconds kStartTimeout{10'000};
  static constexpr std::chrono::milliseconds kControlTimeout{5'000};
  static constexpr std::chrono::milliseconds kStopTimeout{10'000};

  explicit mock_server(std::vector<std::string> flags = {}) : process_{arguments(flags)} {
    if (!process_.started())
      throw std::runtime_error("cannot start " + lifeboat::test::built(LIFEBOAT_METADATA_MOCK));
    auto line = process_.read_line(kStartTimeout);
    if (!line) throw std::runtime_error("metadata mock did not start");
    constexpr char prefix[] = "listening on ";
    if (line->rfind(prefix, 0) != 0) throw std::runtime_error("unexpected mock output: " + *line);
    port_ = static_cast<uint16_t>(std::atoi(line->c_str() + sizeof(prefix) - 1));
  }

  // SIGTERM first, as the mock ends cleanly on it; child_process kills what
  // does not end within the timeout.
  ~mock_server() {
    process_.kill(SIGTERM);
    process_.wait_exit(kStopTimeout);
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

  static std::vector<std::string> arguments(const std::vector<std::string>& flags) {
    std::vector<std::string> args{lifeboat::test::built(LIFEBOAT_METADATA_MOCK)};
    args.insert(args.end(), flags.begin(), flags.end());
    return args;
  }

  lifeboat::test::child_process process_;
  uint16_t port_ = 0;
};

}  // namespace lifeboat::testing
