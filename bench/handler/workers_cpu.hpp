#pragma once

// What handler_bench reads about the CPU: the time the workers' threads used
// and waited for a core (schedstat), and how busy the whole host was
// (/proc/stat).

#include <chrono>
#include <memory>
#include <vector>

#include "bench/loopback.hpp"
#include "tests/support/child_process.hpp"

namespace lifeboat::bench::handler_bench {

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
  // The workers must outlive this; used by one thread.
  explicit workers_threads(
      const std::vector<std::unique_ptr<lifeboat::test::child_process>>& workers);

  workers_cpu read();

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
double host_busy_share(std::chrono::milliseconds window);

}  // namespace lifeboat::bench::handler_bench
