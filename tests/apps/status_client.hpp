#pragma once

// GET requests to a worker's status endpoint (DESIGN "Status endpoint") for
// the end-to-end tests, through lifeboat's own HTTP client.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "messages/status.pb.h"
#include "platform/http_client.hpp"
#include "platform/json.hpp"
#include "tests/apps/app_test_support.hpp"

namespace lifeboat::test {

constexpr std::chrono::milliseconds status_request_timeout{5'000};
// Pace of repeated /status requests while waiting for the step to move: the
// condition is the step, the pause only keeps the loop from taking a core of
// the two the tests share.
constexpr std::chrono::milliseconds status_poll_pace{20};

/// GET `target` on 127.0.0.1:`port`; status 0 when nothing answered.
inline http_response http_get(uint16_t port, const std::string& target) {
  http_request request;
  request.host = "127.0.0.1";
  request.port = port;
  request.target = target;
  auto reply = http_send(request, status_request_timeout);
  if (!reply) return {};
  return *reply;
}

/// GET /status, parsed; nothing unless it answered 200 with JSON of the
/// schema. `raw` (when given) gets the body as sent.
inline std::optional<wire::Status> fetch_status(uint16_t port, std::string* raw = nullptr) {
  auto reply = http_get(port, "/status");
  if (raw != nullptr) *raw = reply.body;
  if (reply.status != 200) return std::nullopt;
  wire::Status out;
  if (parse_json(reply.body, out, "/status")) return std::nullopt;
  return out;
}

/// Asks /status until `done` holds for its answer or `deadline` passes; the
/// last answer (nothing when the endpoint stopped answering).
inline std::optional<wire::Status> await_status(
    uint16_t port, const std::function<bool(const wire::Status&)>& done,
    std::chrono::milliseconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  auto latest = fetch_status(port);
  while (latest && !done(*latest) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(status_poll_pace);
    latest = fetch_status(port);
  }
  return latest;
}

/// Asks /status until its step is past `step` or `deadline` passes.
inline std::optional<wire::Status> await_step_past(uint16_t port, int64_t step,
                                                   std::chrono::milliseconds deadline) {
  return await_status(
      port, [step](const wire::Status& s) { return s.step() > step; }, deadline);
}

/// lifeboat-launch (`launch`) running `nproc` endless lifeboat-demo workers
/// (`demo`, saving under `checkpoint_dir`), each with a status endpoint on a
/// free port (--status-port 0), the launcher's own too.
inline std::vector<std::string> status_job_command(const std::string& launch,
                                                   const std::string& demo,
                                                   const std::string& checkpoint_dir, int nproc) {
  std::vector<std::string> command{launch,          "--nproc", std::to_string(nproc),
                                   "--status-port", "0",       "--"};
  for (auto& arg : endless_demo_command(demo, checkpoint_dir)) command.push_back(arg);
  return command;
}

/// The port of the launcher's own endpoint from its listening line (it has
/// no "[rank R]"); 0 before that line was read.
inline uint16_t launcher_status_port(const output_log& log) {
  for (const auto& l : log.lines())
    if (l.rfind("lifeboat status_endpoint: status endpoint listening on", 0) == 0)
      return listening_port(l);
  return 0;
}

/// A demo worker's start-up as its output and endpoint tell it: `platform_line`,
/// then its status endpoint's port, then /status until the step is past
/// `step`. The last status; nothing when a line or the endpoint did not come.
inline std::optional<wire::Status> await_training_past(output_log& log,
                                                       const std::string& platform_line,
                                                       int64_t step,
                                                       std::chrono::milliseconds deadline) {
  if (!log.read_until(platform_line)) return std::nullopt;
  auto listening = log.read_until("status endpoint listening on");
  if (!listening) return std::nullopt;
  return await_step_past(listening_port(*listening), step, deadline);
}

}  // namespace lifeboat::test
