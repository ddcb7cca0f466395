// Time from a hang's start to every worker exited: 8 lifeboat-demo workers
// under lifeboat-launch, 20 ms steps, LIFEBOAT_HANG_TIMEOUT=1, rank 3's
// training thread blocked at step 30 (--hang-rank/--hang-step). The demo
// prints the wall clock when it starts to hang; the launcher exits once it
// reaped every worker. Target: at most the hang timeout + 200 ms.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "tests/support/build_tree.hpp"
#include "tests/support/child_process.hpp"

namespace {

using namespace std::chrono_literals;

constexpr int workers = 8;
constexpr int rounds = 3;
constexpr int64_t hang_timeout_ms = 1000;
constexpr int64_t target_ms = hang_timeout_ms + 200;
constexpr auto line_deadline = 60s;
constexpr const char* hang_marker = "hangs in step 30 at unix_ms ";

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One run; the milliseconds from the hang to the launcher's exit, or -1.
int64_t one_round(const std::string& dir) {
  std::vector<std::string> env{"LIFEBOAT_PLATFORM=generic",
                               "LIFEBOAT_HANG_TIMEOUT=" + std::to_string(hang_timeout_ms / 1000),
                               "PATH=/usr/bin:/bin"};
  lifeboat::test::child_process run{
      {lifeboat::test::built("apps/lifeboat-launch"), "--nproc", std::to_string(workers),
       "--max-restarts", "0", "--", lifeboat::test::built("apps/lifeboat-demo"), "--checkpoint-dir",
       dir, "--steps", "100000", "--state-mb", "1", "--step-ms", "20", "--hang-rank", "3",
       "--hang-step", "30"},
      true,
      env};
  int64_t hang_at = -1;
  while (auto line = run.read_line(line_deadline)) {
    auto at = line->find(hang_marker);
    if (at != std::string::npos) hang_at = std::stoll(line->substr(at + std::strlen(hang_marker)));
  }
  auto status = run.wait_exit(line_deadline);
  auto exited_at = unix_ms();
  if (!status || hang_at < 0) return -1;
  return exited_at - hang_at;
}

}  // namespace

int main() {
  auto dir = std::filesystem::temp_directory_path() /
             ("lifeboat-hang-bench-" + std::to_string(::getpid()));
  std::vector<int64_t> times;
  for (int r = 0; r < rounds; ++r) {
    std::filesystem::remove_all(dir);
    auto ms = one_round((dir / std::to_string(r)).string());
    if (ms < 0) {
      std::fprintf(stderr, "hang_bench: round %d did not hang and end\n", r);
      return 1;
    }
    times.push_back(ms);
  }
  std::filesystem::remove_all(dir);
  auto sorted = times;
  std::sort(sorted.begin(), sorted.end());
  auto median = sorted[sorted.size() / 2];
  std::printf(
      "hang to every worker exited (%d workers, 20 ms steps, hang timeout %lld ms): median %lld ms"
      " (rounds %lld, %lld, %lld); target <= %lld ms (hang timeout + 200 ms): ratio %.2f\n",
      workers, static_cast<long long>(hang_timeout_ms), static_cast<long long>(median),
      static_cast<long long>(times[0]), static_cast<long long>(times[1]),
      static_cast<long long>(times[2]), static_cast<long long>(target_ms),
      static_cast<double>(median) / static_cast<double>(target_ms));
  return 0;
}
