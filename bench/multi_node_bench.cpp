// Notice to agreement across hosts: 6 lifeboat-demo workers, 2 on each of 3
// hosts (a lifeboat-launch --nnodes 3 in each of 3 network namespaces joined
// by veths and a bridge, tests/support/network_namespaces.hpp), a SIGTERM to
// the last rank (on host 2) until all 6 workers logged the agreed step, read
// through their launchers' output; beside it, the same figure for 6 workers
// under one lifeboat-launch on loopback, measured in the same run, the rounds
// of the two alternating so that other load on the host weighs on both. Each
// round starts its job afresh (the agreement is the first of its workers'
// lives, as a real notice's is). p50 and p99 of the rounds. Needs root for
// the namespaces: elsewhere it says so and measures nothing.

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/build_tree.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/network_namespaces.hpp"

namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;
using lifeboat::test::child_process;
using lifeboat::test::network_namespaces;

constexpr int hosts = 3;
constexpr int per_host = 2;
constexpr int workers = hosts * per_host;
constexpr int rounds = 20;
constexpr auto line_deadline = 60s;
constexpr const char* agreed_marker = "agreed to save at step";
constexpr const char* joined_marker = " joined (generation 0)";
const std::string launch = lifeboat::test::built("apps/lifeboat-launch");
const std::string demo = lifeboat::test::built("apps/lifeboat-demo");
// Each round's service and control ports in the namespaces: fresh ones, so
// that no round waits for the last one's sockets to close.
constexpr int first_port = 29400;

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "multi_node_bench: %s\n", why.c_str());
  std::exit(1);
}

std::vector<std::string> demo_command(const fs::path& dir) {
  return {demo, "--checkpoint-dir", dir.string(), "--steps", "1000000", "--state-mb",
          "1",  "--step-ms",        "5"};
}

std::vector<std::string> job_env(int round) {
  return {"LIFEBOAT_PLATFORM=generic", "LIFEBOAT_CLUSTER_TOKEN=bench-" + std::to_string(round),
          "PATH=/usr/bin:/bin:/usr/sbin:/sbin"};
}

// The launchers of one round: reads their lines together, counting markers.
class job {
 public:
  void start(const std::vector<std::string>& argv, int round) {
    launchers_.push_back(std::make_unique<child_process>(argv, true, job_env(round)));
  }

  /// Reads every launcher's output until `needle` appeared `count` times in
  /// all; false after line_deadline. `on_line` sees every line.
  template <class F>
  bool read_until(const char* needle, int count, F on_line) {
    auto until = clock_type::now() + line_deadline;
    int seen = 0;
    while (seen < count) {
      if (clock_type::now() > until) return false;
      std::vector<pollfd> fds;
      for (auto& l : launchers_) fds.push_back({l->output_fd(), POLLIN, 0});
      ::poll(fds.data(), fds.size(), 100);
      for (size_t i = 0; i < launchers_.size(); ++i) {
        if (fds[i].revents == 0) continue;
        while (auto line = launchers_[i]->read_line(0ms)) {
          on_line(*line);
          if (line->find(needle) != std::string::npos) ++seen;
        }
      }
    }
    return true;
  }

 private:
  std::vector<std::unique_ptr<child_process>> launchers_;
};

// One round: milliseconds from the SIGTERM to the last "agreed" line.
double one_round(const std::vector<std::vector<std::string>>& launchers, int round) {
  job j;
  for (auto& argv : launchers) j.start(argv, round);
  pid_t victim = -1;
  auto find_victim = [&](const std::string& line) {
    int rank = 0;
    int pid = 0;
    if (std::sscanf(line.c_str(), "lifeboat-launch: rank=%d pid=%d", &rank, &pid) == 2 &&
        rank == workers - 1)
      victim = pid;
  };
  if (!j.read_until(joined_marker, workers, find_victim) || victim < 0)
    die("round " + std::to_string(round) + ": the workers did not all join");
  auto start = clock_type::now();
  ::kill(victim, SIGTERM);
  if (!j.read_until(agreed_marker, workers, [](const std::string&) {}))
    die("round " + std::to_string(round) + ": no agreement");
  return std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
}

std::vector<std::vector<std::string>> namespaced_job(const network_namespaces& net,
                                                     const fs::path& dir, int round) {
  auto service = std::to_string(first_port + 4 * round);
  auto control = std::to_string(first_port + 4 * round + 2);
  std::vector<std::vector<std::string>> out;
  for (int k = 0; k < hosts; ++k)
    out.push_back(
        net.launcher(launch, k, hosts, per_host, service, control, {}, demo_command(dir)));
  return out;
}

std::vector<std::vector<std::string>> loopback_job(const fs::path& dir) {
  std::vector<std::string> argv{launch, "--nproc", std::to_string(workers), "--"};
  for (auto& a : demo_command(dir)) argv.push_back(a);
  return {argv};
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  auto at = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return v[std::min(at, v.size() - 1)];
}

}  // namespace

int main() {
  network_namespaces net{hosts};
  if (!net.ok()) {
    std::printf(
        "notice to agreement across hosts: skipped (cannot create network namespaces with %s; "
        "needs root)\n",
        lifeboat::test::ip_command);
    return 0;
  }
  auto dir =
      fs::temp_directory_path() / ("lifeboat-multi-node-bench-" + std::to_string(::getpid()));
  std::vector<double> across;
  std::vector<double> loopback;
  for (int r = 0; r < rounds; ++r) {
    fs::remove_all(dir);
    across.push_back(one_round(namespaced_job(net, dir / "netns", r), r));
    loopback.push_back(one_round(loopback_job(dir / "loopback"), r));
  }
  fs::remove_all(dir);
  auto p50 = percentile(across, 0.5);
  auto ref50 = percentile(loopback, 0.5);
  std::printf(
      "notice to agreement, %d workers: %d hosts (network namespaces, %d workers each) p50 %.1f ms "
      "p99 %.1f ms; one host on loopback p50 %.1f ms p99 %.1f ms (%d rounds each, alternating; "
      "p99 of %d is the slowest round): ratio p50 %.2f\n",
      workers, hosts, per_host, p50, percentile(across, 0.99), ref50, percentile(loopback, 0.99),
      rounds, rounds, p50 / ref50);
  return 0;
}
