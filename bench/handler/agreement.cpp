// handler_bench's notice-to-agreement rounds: the workers' training loop, the
// in-process set-up of N of them as one cluster, and the timing of a round.

#include "bench/handler/agreement.hpp"

#include <poll.h>
#include <unistd.h>

#include <csignal>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "bench/handler/settings.hpp"
#include "checkpoint/memory_tier.hpp"
#include "lifeboat/lifeboat.hpp"
#include "platform/clock.hpp"
#include "tests/support/loopback_port.hpp"

namespace lifeboat::bench::handler_bench {

namespace {

std::string transcript_of(const std::vector<std::vector<std::string>>& lines) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i)
    for (auto& line : lines[i]) out += "[" + std::to_string(i) + "] " + line + "\n";
  return out;
}

}  // namespace

int run_worker(const std::string& dir) {
  std::vector<char> buffer(worker_state_bytes);
  lifeboat::checkpoint_state state;
  state.add_buffer("state", buffer.data(), buffer.size());
  lifeboat::preemption_checkpoint_handler handler(state, dir);
  std::printf("%s\n", ready_line);
  std::fflush(stdout);
  // Runs until the runtime ends the process with the restart code.
  for (;;) handler.run([] { std::this_thread::sleep_for(worker_step_time); });
}

round_result agreement_round(const std::string& self, int n, int round, const char* log_level) {
  auto dir = fs::temp_directory_path() / ("lifeboat-handler-bench-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  int port = lifeboat::test::unused_port();
  if (port == 0) die("no free port on 127.0.0.1");
  // The children inherit the environment; this process has no other threads now.
  ::setenv("LIFEBOAT_WORLD_SIZE", std::to_string(n).c_str(), 1);
  ::setenv("LIFEBOAT_COORDINATOR", ("127.0.0.1:" + std::to_string(port)).c_str(), 1);
  ::setenv("LIFEBOAT_CLUSTER_TOKEN", ("bench-" + std::to_string(round)).c_str(), 1);
  ::setenv("LIFEBOAT_LOG_LEVEL", log_level, 1);
  std::vector<std::unique_ptr<lifeboat::test::child_process>> workers;
  auto spawned = clock_type::now();
  for (int r = 0; r < n; ++r) {
    ::setenv("LIFEBOAT_RANK", std::to_string(r).c_str(), 1);
    workers.push_back(std::make_unique<lifeboat::test::child_process>(
        std::vector<std::string>{self, "--worker", dir.string()}, true));
  }
  for (auto& w : workers) {
    for (;;) {
      auto line =
          w->read_line(std::chrono::duration_cast<std::chrono::milliseconds>(worker_ready_timeout));
      if (!line) die("a worker did not become ready");
      if (*line == ready_line) break;
    }
  }

  auto ready_ms = std::chrono::duration<double, std::milli>(clock_type::now() - spawned).count();
  workers_threads threads{workers};
  auto cpu_before = threads.read();
  std::vector<std::vector<std::string>> lines(workers.size());
  auto signal_unix_us = lifeboat::unix_now_us();
  auto start = clock_type::now();
  workers.back()->kill(SIGTERM);
  std::vector<bool> agreed(workers.size(), false);
  size_t missing = workers.size();
  auto last = start;
  while (missing > 0) {
    std::vector<pollfd> fds;
    for (auto& w : workers) fds.push_back({w->output_fd(), POLLIN, 0});
    if (clock_type::now() - start > agreement_timeout)
      die("no agreement within the timeout; what the workers said:\n" + transcript_of(lines));
    ::poll(fds.data(), fds.size(), 100);
    auto now = clock_type::now();
    // Only the workers that wrote: reading all N after every wake-up would
    // put N system calls of this observer beside each worker's line, on the
    // cores the workers share.
    for (size_t i = 0; i < workers.size(); ++i) {
      if (fds[i].revents == 0) continue;
      while (auto line = workers[i]->read_line(0ms)) {
        lines[i].push_back(*line);
        if (!agreed[i] && line->find(agreed_marker) != std::string::npos) {
          agreed[i] = true;
          --missing;
          last = now;
        }
      }
    }
  }
  auto cpu_after = threads.read();
  for (auto& w : workers)
    if (!w->wait_exit(worker_exit_timeout)) die("a worker did not exit after saving");
  fs::remove_all(dir);
  // The workers exited with the restart code and kept their memory tier.
  (void)checkpoint::remove_orphaned_memory_tiers_in(checkpoint::default_memory_root);
  return {std::chrono::duration<double, std::milli>(last - start).count(), ready_ms,
          cpu_after - cpu_before, signal_unix_us, std::move(lines)};
}

}  // namespace lifeboat::bench::handler_bench
