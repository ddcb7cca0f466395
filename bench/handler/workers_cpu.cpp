// handler_bench's CPU readings: the workers' threads from their schedstat
// files, the host from /proc/stat.

#include "bench/handler/workers_cpu.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "actors/system_config.hpp"
#include "bench/handler/settings.hpp"
#include "checkpoint/async_saver.hpp"

namespace lifeboat::bench::handler_bench {

workers_threads::workers_threads(
    const std::vector<std::unique_ptr<lifeboat::test::child_process>>& workers) {
  for (auto& w : workers) {
    bool leader = &w == &workers.front();
    auto main_tid = std::to_string(w->pid());
    std::error_code ec;
    for (auto& entry : fs::directory_iterator("/proc/" + main_tid + "/task", ec)) {
      lifeboat::bench::fd_guard file{::open((entry.path() / "schedstat").c_str(), O_RDONLY)};
      if (file.fd < 0) continue;  // a thread that just ended
      std::ifstream comm(entry.path() / "comm");
      std::string name;
      std::getline(comm, name);
      auto what = entry.path().filename() == main_tid               ? kind::trainer
                  : name == lifeboat::checkpoint::saver_thread_name ? kind::saver
                  : name == lifeboat::caf_thread_name               ? kind::caf
                                                                    : kind::other;
      tasks_.push_back(task{std::move(file), what, leader});
    }
  }
}

workers_cpu workers_threads::read() {
  workers_cpu out;
  for (auto& t : tasks_) {
    // schedstat: the time on a core, then the time ready but waiting for one (ns).
    char text[128];
    auto n = ::pread(t.schedstat.fd, text, sizeof(text) - 1, 0);
    if (n > 0) {
      text[n] = '\0';
      char* rest = nullptr;
      t.run_ms = std::strtoll(text, &rest, 10) / 1e6;
      t.wait_ms = std::strtoll(rest, nullptr, 10) / 1e6;
    }
    if (t.what == kind::trainer) {
      out.trainer_ms += t.run_ms;
      continue;
    }
    out.lifeboat_ms += t.run_ms;
    if (t.what == kind::saver) out.saver_ms += t.run_ms;
    if (t.what == kind::caf) {
      (t.leader ? out.leader_caf_ms : out.follower_caf_ms) += t.run_ms;
      (t.leader ? out.leader_caf_wait_ms : out.follower_caf_wait_ms) += t.wait_ms;
    }
  }
  return out;
}

double host_busy_share(std::chrono::milliseconds window) {
  struct jiffies {
    long long busy = 0;
    long long idle = 0;
  };
  auto sample = []() -> std::optional<jiffies> {
    std::ifstream in("/proc/stat");
    std::string cpu;
    long long user, nice, system, idle, iowait, irq, softirq, steal;
    if (!(in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
        cpu != "cpu")
      return std::nullopt;
    return jiffies{user + nice + system + irq + softirq + steal, idle + iowait};
  };
  auto before = sample();
  std::this_thread::sleep_for(window);
  auto after = sample();
  if (!before || !after) return -1;
  double busy = after->busy - before->busy;
  double total = busy + (after->idle - before->idle);
  return total > 0 ? busy / total : -1;
}

}  // namespace lifeboat::bench::handler_bench
