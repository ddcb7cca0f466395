// One coordination service against 64, 256 and 1,024 simulated workers, then
// 64 real lifeboat-demo workers under lifeboat-launch (launch_scale.hpp).
//
// The service runs in a process of its own (its CPU and memory are read from
// /proc), the workers in sim_processes processes of simulated workers plus one
// process holding the last rank alone (it is stopped at the end, for silent
// death). A simulated worker runs a real worker's coordination code: its own
// agent and TCP connection, the join handshake, heartbeats every second, the
// step resolver and cluster watcher (tests/support/simulated_workers.hpp).
// Unlike a real worker it has no trainer thread, no checkpoint writer or I/O,
// no watchers of its own and no status endpoint, and it shares its process's
// one CAF I/O thread with the other workers there. That thread runs as
// SCHED_BATCH, as a real worker's does where it does not host the service
// (join_cluster), so that on these shared cores a worker's wake-up does not
// preempt the service's thread in the middle of a fan-out.
//
// Figures, each per N:
//   join:        "join" sent to every worker process until the last worker
//                joined: the first join ("join ms"), and the slowest of it and
//                the joins after each reset ("join max");
//   agreement:   a notice handed to rank N/2's resolver until every worker
//                but the leader took the commit (the leader takes it as it
//                sends it);
//   barrier:     the last worker's exit - the last worker's entry;
//   error:       rank N/2 reports an error until every other worker heard it
//                (the service passes on a generation's first error only: the
//                service is reset and every worker joins again between two);
//   heartbeats:  the service's CPU time (all its threads, /proc schedstat)
//                over a window with nothing but heartbeats, per second;
//   memory:      the service's RSS joined - its RSS before any worker came;
//   silent death: the last rank's process is stopped (SIGSTOP: its socket
//                stays open) until every other worker heard it was lost; its
//                last heartbeat came up to an interval before the stop, so
//                this is the timeout less up to one interval, plus the time
//                the sweep and the broadcast took;
//   svc cpu ms/agree: the service's CPU time over the agreement rounds, per
//                round (heartbeats included: a few ms/s);
//   /status:     one status request to the service (workers listed, bytes).
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench/launch_scale.hpp"
#include "bench/proc_stats.hpp"
#include "bench/scale_roles.hpp"
#include "tests/support/child_process.hpp"

namespace {

using namespace std::chrono_literals;
using lifeboat::test::child_process;
namespace lb = lifeboat::bench;

constexpr int sizes[] = {64, 256, 1024};
constexpr int sim_processes = 2;
constexpr int heartbeat_ms = 1000;          // as a real worker's (lifeboat's default)
constexpr int heartbeat_timeout_ms = 4000;  // 4 heartbeats, as lifeboat sets them
constexpr int agreement_rounds = 30;
constexpr int barrier_rounds = 30;
constexpr int error_rounds = 5;
constexpr auto heartbeat_window = 5s;
constexpr auto answer_bound = 120s;

// Targets of issue 33 (this machine).
constexpr double agreement_p50_target_ms = 50;
constexpr double agreement_p99_target_ms = 200;
constexpr double error_p50_target_ms = 50;
constexpr double memory_target_kib = 16;
constexpr double heartbeat_target_share = 0.05;  // of one core, at 1,024
constexpr int target_n = 1024;

// A child of this bench that answers lines.
class role {
 public:
  explicit role(std::vector<std::string> argv) : proc_(argv) {
    if (!proc_.started()) throw lb::bench_error("cannot start " + argv[1]);
  }
  void send(const std::string& line) {
    if (!proc_.send_line(line)) throw lb::bench_error("a role is gone (sending '" + line + "')");
  }
  // The answer's words after `word`.
  std::string expect(const std::string& word) {
    auto line = proc_.read_line(answer_bound);
    if (!line) throw lb::bench_error("no answer (expected '" + word + "')");
    auto rest = lb::answer_after(*line, word);
    if (!rest) throw lb::bench_error("'" + *line + "' (expected '" + word + "')");
    return *rest;
  }
  pid_t pid() const { return proc_.pid(); }
  void kill(int sig) { proc_.kill(sig); }

 private:
  child_process proc_;
};

struct cluster_result {
  int n = 0;
  std::vector<double> join_ms, agreement_ms, barrier_ms, error_ms;
  double heartbeat_cpu_ms_per_s = 0, idle_rss_kib = 0, joined_rss_kib = 0;
  double silent_death_ms = 0;
  double service_cpu_ms_per_agreement = 0;
  long status_workers = 0, status_bytes = 0;
};

double ms_between(int64_t from_ns, int64_t to_ns) {
  return static_cast<double>(to_ns - from_ns) / 1e6;
}

// Where a run is, on stderr: a long one shows its progress.
void progress(int n, const char* what) {
  std::fprintf(stderr, "scale_bench: N = %d: %s\n", n, what);
}

cluster_result run_cluster(const std::string& self, int n) {
  cluster_result r;
  r.n = n;
  role service{{self, "--service", std::to_string(n), std::to_string(heartbeat_timeout_ms)}};
  auto port = service.expect("port");
  r.idle_rss_kib = lb::rss_kib(service.pid());
  // Ranks 0 .. n - 2 split between the sim processes; rank n - 1 alone.
  std::vector<std::unique_ptr<role>> sims;
  std::vector<int> firsts;
  int victim = n - 1;
  for (int p = 0, first = 0; p <= sim_processes; ++p) {
    int count = p == sim_processes ? 1 : (victim - first) / (sim_processes - p);
    sims.push_back(std::make_unique<role>(
        std::vector<std::string>{self, "--sim", port, std::to_string(n), std::to_string(first),
                                 std::to_string(count), std::to_string(heartbeat_ms)}));
    firsts.push_back(first);
    first += count;
  }
  // The process holding rank n / 2, which takes the notices and reports.
  auto chosen = n / 2;
  auto& owner = *sims[static_cast<size_t>(std::upper_bound(firsts.begin(), firsts.end(), chosen) -
                                          firsts.begin() - 1)];
  for (auto& s : sims) s->expect("ready");
  auto all = [&](const std::string& line, const std::string& word) {
    std::vector<std::string> answers;
    for (auto& s : sims) s->send(line);
    for (auto& s : sims) answers.push_back(s->expect(word));
    return answers;
  };
  auto latest = [](const std::vector<std::string>& answers) {
    int64_t last = 0;
    for (auto& a : answers) last = std::max(last, lb::parse_ns(a));
    return last;
  };
  auto start = lb::steady_ns();
  r.join_ms.push_back(ms_between(start, latest(all("join", "joined"))));
  r.joined_rss_kib = lb::rss_kib(service.pid());
  progress(n, "joined; heartbeats only");

  auto cpu_before = lb::cpu_ns(service.pid());
  auto window_start = lb::steady_ns();
  lb::wait_for(heartbeat_window);
  r.heartbeat_cpu_ms_per_s = static_cast<double>(lb::cpu_ns(service.pid()) - cpu_before) /
                             static_cast<double>(lb::steady_ns() - window_start) * 1e3;

  progress(n, "agreements");
  // Only heartbeats and the rounds reach the service meanwhile (arming
  // stays inside the worker processes): its CPU time per round.
  auto agreement_cpu = lb::cpu_ns(service.pid());
  for (int round = 0; round < agreement_rounds; ++round) {
    all("arm", "armed");
    owner.send("notice " + std::to_string(chosen));
    auto t0 = lb::parse_ns(owner.expect("noticed"));
    r.agreement_ms.push_back(ms_between(t0, latest(all("commits", "commits"))));
  }
  r.service_cpu_ms_per_agreement =
      static_cast<double>(lb::cpu_ns(service.pid()) - agreement_cpu) / 1e6 / agreement_rounds;
  progress(n, "barriers");
  for (int round = 0; round < barrier_rounds; ++round) {
    auto times = all("barrier scale/" + std::to_string(round), "barrier");
    int64_t entry = 0, exit = 0;
    for (auto& t : times) {
      auto space = t.find(' ');
      entry = std::max(entry, lb::parse_ns(t.substr(0, space)));
      exit = std::max(exit, lb::parse_ns(t.substr(space + 1)));
    }
    r.barrier_ms.push_back(ms_between(entry, exit));
  }
  service.send("status");
  auto status = service.expect("status");
  std::sscanf(status.c_str(), "%ld %ld", &r.status_workers, &r.status_bytes);
  progress(n, "errors");
  for (int round = 0; round < error_rounds; ++round) {
    all("arm", "armed");
    owner.send("report " + std::to_string(chosen));
    auto t0 = lb::parse_ns(owner.expect("reported"));
    r.error_ms.push_back(
        ms_between(t0, latest(all("failures " + std::to_string(chosen) + " 0", "failures"))));
    service.send("reset");
    service.expect("reset");
    start = lb::steady_ns();
    r.join_ms.push_back(ms_between(start, latest(all("rejoin", "joined"))));
  }
  all("arm", "armed");
  progress(n, "silent death");
  sims.back()->kill(SIGSTOP);
  auto stopped = lb::steady_ns();
  std::vector<std::string> answers;
  for (size_t i = 0; i + 1 < sims.size(); ++i)
    sims[i]->send("failures " + std::to_string(victim) + " 1");
  for (size_t i = 0; i + 1 < sims.size(); ++i) answers.push_back(sims[i]->expect("failures"));
  r.silent_death_ms = ms_between(stopped, latest(answers));
  sims.back()->kill(SIGKILL);
  for (size_t i = 0; i + 1 < sims.size(); ++i) sims[i]->send("exit");
  service.send("exit");
  return r;
}

void verdict(const char* what, double value, const char* op, double target, const char* unit) {
  bool met = std::string{op} == "<" ? value < target : value <= target;
  std::printf("target %s %s %g %s: %.2f %s, %s\n", what, op, target, unit, value, unit,
              met ? "met" : "NOT met");
}

void print_header() {
  std::printf(
      "scale_bench: one coordination service; N simulated workers in %d processes plus the "
      "last rank alone; heartbeats every %d ms, timeout %d ms; %d agreement, %d barrier, %d "
      "error rounds\n",
      sim_processes, heartbeat_ms, heartbeat_timeout_ms, agreement_rounds, barrier_rounds,
      error_rounds);
  std::printf("%5s %8s %8s %9s %9s %9s %9s %11s %8s %8s %9s %9s %8s %16s\n", "N", "join ms",
              "join max", "agree p50", "agree p99", "barr p50", "error p50", "hb cpu ms/s",
              "rss MiB", "KiB/wkr", "silent ms", "status wk", "status B", "svc cpu ms/agree");
  std::fflush(stdout);
}

void print_row(const cluster_result& r) {
  std::printf("%5d %8.1f %8.1f %9.2f %9.2f %9.2f %9.2f %11.2f %8.1f %8.2f %9.0f %9ld %8ld %16.2f\n",
              r.n, r.join_ms.front(), *std::max_element(r.join_ms.begin(), r.join_ms.end()),
              lb::percentile(r.agreement_ms, 0.5), lb::percentile(r.agreement_ms, 0.99),
              lb::percentile(r.barrier_ms, 0.5), lb::percentile(r.error_ms, 0.5),
              r.heartbeat_cpu_ms_per_s, r.joined_rss_kib / 1024.0,
              (r.joined_rss_kib - r.idle_rss_kib) / r.n, r.silent_death_ms, r.status_workers,
              r.status_bytes, r.service_cpu_ms_per_agreement);
  std::fflush(stdout);
  if (r.n != target_n) return;
  verdict("notice-to-agreement p50 at 1024", lb::percentile(r.agreement_ms, 0.5),
          "<=", agreement_p50_target_ms, "ms");
  verdict("notice-to-agreement p99 at 1024", lb::percentile(r.agreement_ms, 0.99),
          "<=", agreement_p99_target_ms, "ms");
  verdict("error broadcast p50 at 1024", lb::percentile(r.error_ms, 0.5), "<=", error_p50_target_ms,
          "ms");
  verdict("service memory per worker at 1024", (r.joined_rss_kib - r.idle_rss_kib) / r.n,
          "<=", memory_target_kib, "KiB");
  verdict("heartbeat CPU of 1024 workers (share of one core)",
          r.heartbeat_cpu_ms_per_s / 1000.0 * 100, "<", heartbeat_target_share * 100, "%");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 3 && args[0] == "--service")
      return lb::run_service_role(std::stoi(args[1]), std::stoi(args[2]));
    if (args.size() == 6 && args[0] == "--sim")
      return lb::run_sim_role(static_cast<uint16_t>(std::stoi(args[1])), std::stoi(args[2]),
                              std::stoi(args[3]), std::stoi(args[4]), std::stoi(args[5]));
    if (args.size() == 1 && args[0] == "--launch") {
      lb::run_launch_scale();
      return 0;
    }
    // Sizes given: those clusters only, without the launcher's part.
    std::vector<int> only;
    for (auto& a : args) {
      only.push_back(std::atoi(a.c_str()));
      if (only.back() < 2) {
        std::fprintf(
            stderr,
            "usage: scale_bench [N ...] (N >= 2 simulated workers) | scale_bench --launch\n");
        return 2;
      }
    }
    std::signal(SIGPIPE, SIG_IGN);
    auto self = std::filesystem::read_symlink("/proc/self/exe").string();
    print_header();
    for (auto n : only.empty() ? std::vector<int>(std::begin(sizes), std::end(sizes)) : only)
      print_row(run_cluster(self, n));
    if (only.empty()) lb::run_launch_scale();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scale_bench: error: %s\n", e.what());
    return 1;
  }
}
