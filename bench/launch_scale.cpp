#include "bench/launch_scale.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "bench/proc_stats.hpp"
#include "checkpoint/memory_tier.hpp"
#include "tests/support/build_tree.hpp"
#include "tests/support/child_process.hpp"

namespace lifeboat::bench {

namespace {

using namespace std::chrono_literals;

constexpr int launch_workers = 64;
constexpr const char* demo_steps = "1000000";
constexpr const char* demo_step_ms = "100";
constexpr auto line_bound = 120s;
constexpr auto exit_bound = 120s;
// How long the workers train before one's memory is read: the runtime's
// actors and buffers exist by then.
constexpr auto settle_window = 2s;
constexpr double worker_rss_target_mib = 30;
constexpr const char* joined_marker = "joined the coordination service";
constexpr const char* start_marker = "lifeboat-launch: rank=";

}  // namespace

void run_launch_scale() {
  char scratch[] = "/tmp/lifeboat-scale-XXXXXX";
  if (::mkdtemp(scratch) == nullptr) throw bench_error("cannot make a scratch directory");
  // The workers say when they joined at info level; the launcher passes its
  // environment on.
  ::setenv("LIFEBOAT_LOG_LEVEL", "info", 1);
  auto t0 = steady_ns();
  test::child_process launcher{
      {lifeboat::test::built("apps/lifeboat-launch"), "--nproc", std::to_string(launch_workers),
       "--", lifeboat::test::built("apps/lifeboat-demo"), "--steps", demo_steps, "--checkpoint-dir",
       std::string{scratch} + "/ckpt", "--state-mb", "0", "--step-ms", demo_step_ms},
      true};
  ::unsetenv("LIFEBOAT_LOG_LEVEL");
  if (!launcher.started()) throw bench_error("cannot start lifeboat-launch");
  std::map<int, pid_t> pids;
  int joined = 0;
  std::string last;
  while (joined < launch_workers) {
    auto line = launcher.read_line(line_bound);
    if (!line)
      throw bench_error("lifeboat-launch: only " + std::to_string(joined) + " workers joined (" +
                        (launcher.at_eof() ? "it exited" : "no line for a while") +
                        "); its last line: " + last);
    last = *line;
    if (line->find(joined_marker) != std::string::npos) ++joined;
    int rank = 0;
    int pid = 0;
    auto at = line->find(start_marker);
    if (at != std::string::npos &&
        std::sscanf(line->c_str() + at, "lifeboat-launch: rank=%d pid=%d", &rank, &pid) == 2)
      pids[rank] = pid;
  }
  auto started_ms = static_cast<double>(steady_ns() - t0) / 1e6;
  wait_for(settle_window);
  auto worker = pids.count(1) > 0 ? pids[1] : 0;
  auto rss_mib = status_kib(worker) / 1024.0;
  auto threads = thread_names(worker);
  auto term = steady_ns();
  launcher.kill(SIGTERM);
  // Drained while the workers save and exit, so none blocks on a full pipe.
  while (launcher.read_line(line_bound)) {
  }
  auto code = launcher.wait_exit(exit_bound);
  auto exited_ms = static_cast<double>(steady_ns() - term) / 1e6;
  std::filesystem::remove_all(scratch);
  // The workers exited with the restart code and kept their memory tier.
  (void)checkpoint::remove_orphaned_memory_tiers_in(checkpoint::default_memory_root);
  if (!code) throw bench_error("lifeboat-launch did not exit after SIGTERM");

  std::printf("\n%d lifeboat-demo workers under lifeboat-launch (--state-mb 0 --step-ms %s)\n",
              launch_workers, demo_step_ms);
  std::printf("start (launcher to every worker joined): %.0f ms\n", started_ms);
  std::printf("SIGTERM to every worker exited:           %.0f ms (launcher exit code %d)\n",
              exited_ms, WIFEXITED(*code) ? WEXITSTATUS(*code) : -1);
  std::printf("one worker's RSS (rank 1, no trainer state): %.1f MiB, target <= %.0f MiB: %s\n",
              rss_mib, worker_rss_target_mib, rss_mib <= worker_rss_target_mib ? "met" : "NOT met");
  std::map<std::string, int> by_name;
  for (auto& name : threads) ++by_name[name];
  std::printf("its threads: %zu (", threads.size());
  const char* sep = "";
  for (auto& [name, count] : by_name) {
    std::printf("%s%s x%d", sep, name.c_str(), count);
    sep = ", ";
  }
  std::printf(")\n");
}

}  // namespace lifeboat::bench
