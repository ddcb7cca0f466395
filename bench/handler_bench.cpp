// The handler API's two costs, each beside its reference measured in the same run:
//   hot path: step_completed() while no notice is active  vs  an empty, not
//             inlined function call (Google Benchmark, medians of repetitions);
//   notice to agreement: a SIGTERM to one of N worker processes until every
//             worker has logged the agreed step, N = 2, 8, 16 (the step itself
//             is not in it: a worker's step takes 1 ms and is not waited for)
//             vs  the exchange floor: the two fan-outs of any agreement on
//             max + 1 (a query to all, every answer back, the decision to
//             all) as single bytes over raw TCP between this process and N
//             processes that each step a 1 ms loop like the workers, until
//             the last of them has the decision (each reports its
//             steady_clock, CLOCK_MONOTONIC, which compares across
//             processes). No runtime, no signal: what this host charges
//             before lifeboat adds anything. A second floor has the same
//             workers answer through a CAF 0.17 broker on the middleman's
//             I/O thread, with lifeboat's actor system configuration, as
//             lifeboat's agent does: what the transport lifeboat is built on
//             charges before its protocol adds anything. The floors are warm (the first
//             exchanges of their fresh processes, which page in code, are not
//             counted); the agreement is the first of its workers' lives, as
//             a real notice's is. Below each row, the CPU the workers used
//             from just before the signal until the last agreement was read,
//             trainers' step loops apart from lifeboat's threads, beside
//             the CPU the host had in that time, and where lifeboat's went:
//             rank 0's CAF threads (its I/O thread runs its agent and
//             resolver, and the service every message of the round passes),
//             the other workers' CAF threads, and the checkpoint writers' I/O
//             threads (the workers that got the decision first start saving
//             at once, on the cores the others still need to hear it); and
//             how long the CAF threads were ready to run but waited for a
//             core. The quartiles beside the median show how far the rounds
//             of one run spread.
// Above the rows, how busy the host's CPU was with no worker running, just
// before the rounds and just after them: other load on the host slows every
// row, and nothing else in the output would show it.
// Last, the N = 16 agreement phase by phase: more rounds with the workers
// logging at debug level, and when each phase ended (the notice at the
// leader, the query and the commit at the first and last follower, the
// reports at the leader): where the time from the signal went.
// The workers are this program, started again with --worker DIR,
// --floor-worker PORT or --caf-floor-worker PORT (child_process ends them
// with the bench).
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <caf/actor_system.hpp>
#include <caf/io/broker.hpp>
#include <caf/io/middleman.hpp>

#include "actors/system_config.hpp"
#include "bench/loopback.hpp"
#include "checkpoint/async_saver.hpp"
#include "lifeboat/lifeboat.hpp"
#include "platform/clock.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/loopback_port.hpp"

namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr double hot_path_target_ns = 20.0;
constexpr double agreement_target_ms = 2.0;
constexpr int agreement_target_n = 16;
constexpr auto worker_step_time = 1ms;
constexpr auto worker_ready_timeout = 60s;
constexpr auto agreement_timeout = 20s;
constexpr auto worker_exit_timeout = 30s;
constexpr auto floor_timeout = 10s;        // each wait of the floor's exchange
constexpr int floor_warmup_rounds = 5;     // per N, not counted
constexpr int floor_measured_rounds = 30;  // per N; cheap next to the agreement rounds
constexpr auto host_load_window = 300ms;
constexpr size_t worker_state_bytes = 64 * 1024;
constexpr const char* agreed_marker = "agreed to save at step";
constexpr const char* ready_line = "ready";

struct sizes {
  int workers;
  int rounds;
};
// Each round starts every process anew, so rounds are few; but at N = 16 the
// median of eight rounds ranged from 1.83 to 2.91 ms in six runs on one
// host, on both sides of the target: thirty rounds there.
constexpr sizes agreement_sizes[] = {{2, 10}, {8, 10}, {16, 30}};

std::unique_ptr<lifeboat::preemption_checkpoint_handler> hot_handler;
int64_t hot_step = 0;

__attribute__((noinline)) void empty_call(int64_t step) { benchmark::DoNotOptimize(step); }

void bm_empty_call(benchmark::State& state) {
  int64_t step = 0;
  for (auto _ : state) empty_call(++step);
}

void bm_step_completed(benchmark::State& state) {
  for (auto _ : state) hot_handler->step_completed(++hot_step);
}

BENCHMARK(bm_empty_call)->Repetitions(10)->ReportAggregatesOnly(true);
BENCHMARK(bm_step_completed)->Repetitions(10)->ReportAggregatesOnly(true);

// Keeps the console output and remembers each benchmark's median.
class median_reporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs)
      if (run.aggregate_name == "median")
        medians_[run.run_name.function_name] = run.GetAdjustedRealTime();
    ConsoleReporter::ReportRuns(runs);
  }
  double median(const std::string& name) const { return medians_.at(name); }

 private:
  std::map<std::string, double> medians_;
};

// --worker DIR: a worker of an agreement round; it trains until the runtime
// ends it with the restart code.
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

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "handler_bench: %s\n", what.c_str());
  std::exit(1);
}

// CPU time the workers' threads have used so far, from the kernel's
// schedstat: the main threads, which run the trainers' step loops, apart
// from the threads lifeboat started, and of those the checkpoint writers'.
// On a host with fewer cores than workers, this shows what the agreement
// competed with. Beside it, from the same file, how long the CAF threads
// were ready to run but waited for a core. Every message of a round passes
// rank 0's I/O thread, so its wait is on the way to the decision; the figure
// also holds rank 0's scheduler thread, which CAF names alike.
struct workers_cpu {
  double trainer_ms = 0;
  double lifeboat_ms = 0;
  double saver_ms = 0;
  double leader_caf_ms = 0;    // rank 0's CAF threads; its I/O thread runs the service
  double follower_caf_ms = 0;  // the other workers' CAF threads
  double leader_caf_wait_ms = 0;
  double follower_caf_wait_ms = 0;

  workers_cpu operator-(const workers_cpu& earlier) const {
    return {trainer_ms - earlier.trainer_ms,
            lifeboat_ms - earlier.lifeboat_ms,
            saver_ms - earlier.saver_ms,
            leader_caf_ms - earlier.leader_caf_ms,
            follower_caf_ms - earlier.follower_caf_ms,
            leader_caf_wait_ms - earlier.leader_caf_wait_ms,
            follower_caf_wait_ms - earlier.follower_caf_wait_ms};
  }
};

// The workers' threads, listed once before the signal, with their schedstat
// files left open, so that a reading is one pread per thread. Listing
// /proc/PID/task and opening every file anew took 2 to 2.6 ms at N = 16, as
// long as the agreement itself: the figures then also held that much time
// before the signal (the trainers) and after the last agreement (the
// checkpoint writers at work). A thread started after the listing is not
// counted; one that ended keeps its last reading.
class workers_threads {
 public:
  explicit workers_threads(
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

  workers_cpu read() {
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

 private:
  enum class kind { trainer, saver, caf, other };
  struct task {
    lifeboat::bench::fd_guard schedstat;
    kind what;
    bool leader;
    double run_ms = 0;
    double wait_ms = 0;
  };
  std::vector<task> tasks_;
};

// The share of the host's CPU time that was busy (any process, the kernel)
// or stolen by the hypervisor over `window`, from /proc/stat; negative if
// unreadable. Sampled while no worker runs, it shows what else on the host
// competes with the rounds: 80 workers left over from earlier runs took the
// N = 16 p50 from about 2.5 ms to 4.4 to 5.9 ms here, with nothing else in
// the output to tell.
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

std::string transcript_of(const std::vector<std::vector<std::string>>& lines) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i)
    for (auto& line : lines[i]) out += "[" + std::to_string(i) + "] " + line + "\n";
  return out;
}

struct round_result {
  double ms = 0;    // until the last worker logged the agreed step
  workers_cpu cpu;  // used by all workers in that time
  // For the phases: when the signal was sent, and each worker's lines.
  int64_t signal_unix_us = 0;
  std::vector<std::vector<std::string>> lines;
};

// One round: N workers train; the last rank gets a SIGTERM. `log_level` is
// what the workers log: "info" for the figure, "debug" for the phases.
round_result agreement_round(const std::string& self, int n, int round,
                             const char* log_level = "info") {
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
  return {std::chrono::duration<double, std::milli>(last - start).count(), cpu_after - cpu_before,
          signal_unix_us, std::move(lines)};
}

// A floor worker's trainer: a 1 ms step loop on its own thread, as a
// worker's trainer has, until the worker is done.
class floor_trainer {
 public:
  floor_trainer()
      : thread_{[this] {
          while (!done_.load()) std::this_thread::sleep_for(worker_step_time);
        }} {}
  floor_trainer(const floor_trainer&) = delete;
  floor_trainer& operator=(const floor_trainer&) = delete;
  ~floor_trainer() {
    done_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// --floor-worker PORT: beside its trainer, the main thread takes
// part in exchanges until the bench hangs up: query in, answer out, decision
// in, then the steady_clock ticks at which the decision arrived out.
int run_floor_worker(uint16_t port) {
  using namespace lifeboat::bench;
  floor_trainer trainer;
  auto conn = connect_loopback(port);
  char byte = 0;
  while (conn.fd >= 0 && transfer_all(conn.fd, &byte, 1, false, floor_timeout) &&
         transfer_all(conn.fd, &byte, 1, true, floor_timeout) &&
         transfer_all(conn.fd, &byte, 1, false, floor_timeout)) {
    int64_t arrived = clock_type::now().time_since_epoch().count();
    if (!transfer_all(conn.fd, reinterpret_cast<char*>(&arrived), sizeof(arrived), true,
                      floor_timeout))
      break;
  }
  return 0;
}

// The CAF floor worker's side of the exchange: a broker that answers each
// query byte with a byte and each decision byte with its arrival time.
caf::behavior caf_floor_broker(caf::io::broker* self, caf::io::connection_handle hdl) {
  self->configure_read(hdl, caf::io::receive_policy::exactly(1));
  auto awaiting_decision = std::make_shared<bool>(false);
  return {
      [=](const caf::io::new_data_msg& msg) {
        if (*awaiting_decision) {
          int64_t arrived = clock_type::now().time_since_epoch().count();
          auto* bytes = reinterpret_cast<const char*>(&arrived);
          self->write(msg.handle, sizeof(arrived), bytes);
        } else {
          self->write(msg.handle, 1, msg.buf.data());
        }
        self->flush(msg.handle);
        *awaiting_decision = !*awaiting_decision;
      },
      [=](const caf::io::connection_closed_msg&) { self->quit(); },
  };
}

// --caf-floor-worker PORT: --floor-worker's exchange through CAF.
int run_caf_floor_worker(uint16_t port) {
  floor_trainer trainer;
  lifeboat::system_config cfg;
  caf::actor_system sys{cfg};
  auto broker =
      sys.middleman().spawn_client(caf_floor_broker, lifeboat::bench::loopback_host, port);
  if (!broker) return 1;
  broker = nullptr;
  // Returns once the bench hung up and the broker quit.
  sys.await_all_actors_done();
  return 0;
}

// N floor workers, then exchanges with them: milliseconds from the first
// query until the last worker had the decision, one sample per exchange
// after the warm-up (the first exchanges of fresh processes page in code).
std::vector<double> floor_rounds(const std::string& self, const char* worker_flag, int n) {
  using namespace lifeboat::bench;
  uint16_t port = 0;
  auto listener = listen_loopback(n, port);
  if (listener.fd < 0) die("floor: cannot listen on 127.0.0.1");
  std::vector<std::unique_ptr<lifeboat::test::child_process>> workers;
  std::vector<fd_guard> conns;
  for (int i = 0; i < n; ++i)
    workers.push_back(std::make_unique<lifeboat::test::child_process>(
        std::vector<std::string>{self, worker_flag, std::to_string(port)}));
  for (int i = 0; i < n; ++i) {
    conns.push_back(accept_within(listener.fd, worker_ready_timeout));
    if (conns.back().fd < 0) die("floor: a worker did not connect");
  }
  std::vector<double> samples;
  for (int round = 0; round < floor_warmup_rounds + floor_measured_rounds; ++round) {
    char byte = 'q';
    auto exchange = [&](bool sending) {
      for (auto& c : conns)
        if (!transfer_all(c.fd, &byte, 1, sending, floor_timeout))
          die("floor: a worker went silent");
    };
    auto start = clock_type::now();
    exchange(true);   // the query to all
    exchange(false);  // every answer
    exchange(true);   // the decision to all
    int64_t last = 0;
    for (auto& c : conns) {
      int64_t arrived = 0;
      if (!transfer_all(c.fd, reinterpret_cast<char*>(&arrived), sizeof(arrived), false,
                        floor_timeout))
        die("floor: a worker did not report its time");
      last = std::max(last, arrived);
    }
    auto since = clock_type::time_point(clock_type::duration(last)) - start;
    if (round >= floor_warmup_rounds)
      samples.push_back(std::chrono::duration<double, std::milli>(since).count());
  }
  conns.clear();  // the workers see EOF and exit
  for (auto& w : workers)
    if (w->wait_exit(worker_exit_timeout) != 0) die("floor: a worker failed");
  return samples;
}

double percentile(std::vector<double> xs, double p) {
  std::sort(xs.begin(), xs.end());
  auto index = static_cast<size_t>(p * (xs.size() - 1) + 0.5);
  return xs[index];
}

// Where one agreement's time goes. The workers log at debug level,
// where each step resolver writes every protocol step it takes with the wall
// clock, which the processes of one host share. Each milestone is the median
// over the rounds, in ms after the signal was sent. The debug lines cost the
// workers a write each, so the figure itself comes from the plain run.
constexpr int phases_rounds = 30;

// The first and the last time one of ranks [from, to) took `what` (as the
// resolver's debug line names it), in ms after the signal.
std::pair<double, double> taken(const round_result& r, size_t from, size_t to,
                                const std::string& what) {
  const std::string marker = "took " + what + " at unix_us ";
  std::vector<double> times;
  for (size_t rank = from; rank < to; ++rank)
    for (auto& line : r.lines[rank])
      if (auto at = line.find(marker); at != std::string::npos)
        times.push_back((std::stoll(line.substr(at + marker.size())) - r.signal_unix_us) / 1000.0);
  if (times.empty()) die("phases: no worker logged that it took " + what);
  auto [first, last] = std::minmax_element(times.begin(), times.end());
  return {*first, *last};
}

// Each milestone of every round, in ms after the signal.
struct phase_samples {
  std::vector<double> own_notice, leader_notice, first_query, last_query, first_report, last_report,
      first_commit, last_commit, agreed;
};

void print_phases(const std::string& self) {
  const int n = agreement_target_n;
  phase_samples at;
  for (int round = 0; round < phases_rounds; ++round) {
    auto r = agreement_round(self, n, round, "debug");
    at.own_notice.push_back(taken(r, n - 1, n, "a notice of its own").first);
    at.leader_notice.push_back(taken(r, 0, 1, "a notice").first);
    auto [first_query, last_query] = taken(r, 1, n, "a query");
    at.first_query.push_back(first_query);
    at.last_query.push_back(last_query);
    auto [first_report, last_report] = taken(r, 0, 1, "a report");
    at.first_report.push_back(first_report);
    at.last_report.push_back(last_report);
    auto [first_commit, last_commit] = taken(r, 1, n, "a commit");
    at.first_commit.push_back(first_commit);
    at.last_commit.push_back(last_commit);
    at.agreed.push_back(r.ms);
  }
  auto p50 = [](const std::vector<double>& xs) { return percentile(xs, 0.5); };
  std::printf(
      "\nnotice to agreement N=%d, phase by phase (medians of %d rounds, ms after the signal; "
      "the workers log at debug level)\n",
      n, phases_rounds);
  std::printf("  the signalled worker's resolver took the notice %.2f, the leader's %.2f\n",
              p50(at.own_notice), p50(at.leader_notice));
  std::printf("  the query reached the followers' resolvers: the first %.2f, the last %.2f\n",
              p50(at.first_query), p50(at.last_query));
  std::printf("  the leader took the reports: the first %.2f, the last %.2f\n",
              p50(at.first_report), p50(at.last_report));
  std::printf(
      "  the commit reached the followers' resolvers: the first %.2f, the last %.2f; the last "
      "agreement was read %.2f\n",
      p50(at.first_commit), p50(at.last_commit), p50(at.agreed));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string{argv[1]} == "--worker") return run_worker(argv[2]);
  if (argc == 3 && std::string{argv[1]} == "--floor-worker")
    return run_floor_worker(static_cast<uint16_t>(std::stoi(argv[2])));
  if (argc == 3 && std::string{argv[1]} == "--caf-floor-worker")
    return run_caf_floor_worker(static_cast<uint16_t>(std::stoi(argv[2])));
  for (const char* var : {"LIFEBOAT_RANK", "LIFEBOAT_WORLD_SIZE", "LIFEBOAT_COORDINATOR",
                          "TF_CONFIG", "RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS"})
    ::unsetenv(var);

  benchmark::Initialize(&argc, argv);
  median_reporter reporter;
  {
    auto dir = fs::temp_directory_path() / ("lifeboat-hot-path-" + std::to_string(::getpid()));
    std::vector<char> buffer(worker_state_bytes);
    lifeboat::checkpoint_state state;
    state.add_buffer("state", buffer.data(), buffer.size());
    hot_handler = std::make_unique<lifeboat::preemption_checkpoint_handler>(state, dir.string());
    benchmark::RunSpecifiedBenchmarks(&reporter);
    hot_handler.reset();
    fs::remove_all(dir);
  }

  struct agreement_samples {
    int n;
    std::vector<double> ours;
    std::vector<double> floor;
    std::vector<double> caf_floor;
    std::vector<workers_cpu> cpu;
  };
  std::vector<agreement_samples> agreement;
  auto self = fs::read_symlink("/proc/self/exe").string();
  double busy_before = host_busy_share(host_load_window);
  for (auto [n, rounds] : agreement_sizes) {
    agreement_samples row{n, {}, {}, {}, {}};
    for (int round = 0; round < rounds; ++round) {
      auto result = agreement_round(self, n, round);
      row.ours.push_back(result.ms);
      row.cpu.push_back(result.cpu);
    }
    row.floor = floor_rounds(self, "--floor-worker", n);
    row.caf_floor = floor_rounds(self, "--caf-floor-worker", n);
    agreement.push_back(std::move(row));
  }
  double busy_after = host_busy_share(host_load_window);

  double ours = reporter.median("bm_step_completed");
  double floor = reporter.median("bm_empty_call");
  std::printf("\nhandler_bench\n");
  std::printf(
      "hot path step_completed  %6.2f ns median; empty call %6.2f ns; ratio %.2fx "
      "(target <= %.0f ns: %s)\n",
      ours, floor, ours / floor, hot_path_target_ns,
      ours <= hot_path_target_ns ? "met" : "NOT met");
  auto percent = [](double share) {
    return share < 0 ? std::string{"unknown"} : std::to_string(std::lround(share * 100)) + "%";
  };
  std::printf(
      "host CPU busy with no worker running (/proc/stat over %lld ms): %s before the rounds, %s "
      "after; any other load slows every row below\n",
      static_cast<long long>(host_load_window.count()), percent(busy_before).c_str(),
      percent(busy_after).c_str());
  for (const auto& row : agreement) {
    double p50 = percentile(row.ours, 0.5);
    double floor_p50 = percentile(row.floor, 0.5);
    std::printf(
        "notice to agreement N=%-2d  p50 %7.2f ms  (p25 %.2f, p75 %.2f)  max %7.2f ms  "
        "(%zu rounds); exchange floor p50 %5.2f ms (%zu rounds); ratio %.1fx%s\n",
        row.n, p50, percentile(row.ours, 0.25), percentile(row.ours, 0.75),
        percentile(row.ours, 1.0), row.ours.size(), floor_p50, row.floor.size(), p50 / floor_p50,
        row.n == agreement_target_n
            ? (p50 <= agreement_target_ms ? "  target <= 2 ms: met" : "  target <= 2 ms: NOT met")
            : "");
    double caf_p50 = percentile(row.caf_floor, 0.5);
    std::printf("    the exchange through CAF brokers p50 %5.2f ms (%zu rounds): %.1fx the floor\n",
                caf_p50, row.caf_floor.size(), caf_p50 / floor_p50);
    auto cpu_p50 = [&](double workers_cpu::*field) {
      std::vector<double> xs;
      for (auto& c : row.cpu) xs.push_back(c.*field);
      return percentile(xs, 0.5);
    };
    std::printf(
        "    CPU the workers used in it (p50): trainer step loops %.2f ms, lifeboat threads %.2f "
        "ms, of the p50 x %u cores = %.2f ms this host had\n",
        cpu_p50(&workers_cpu::trainer_ms), cpu_p50(&workers_cpu::lifeboat_ms),
        std::thread::hardware_concurrency(), p50 * std::thread::hardware_concurrency());
    std::printf(
        "      of lifeboat's: rank 0's CAF threads (agent, resolver and service) %.2f ms, the "
        "CAF threads of ranks 1 to %d %.2f ms, checkpoint writers' I/O threads %.2f ms\n",
        cpu_p50(&workers_cpu::leader_caf_ms), row.n - 1, cpu_p50(&workers_cpu::follower_caf_ms),
        cpu_p50(&workers_cpu::saver_ms));
    std::printf(
        "      ready to run but waiting for a core (p50): rank 0's CAF threads %.2f ms, the CAF "
        "threads of ranks 1 to %d %.2f ms in all\n",
        cpu_p50(&workers_cpu::leader_caf_wait_ms), row.n - 1,
        cpu_p50(&workers_cpu::follower_caf_wait_ms));
  }
  print_phases(self);
  return 0;
}
