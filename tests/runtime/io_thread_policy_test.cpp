// The coordination service's fan-out is not preempted by the workers it
// wakes: every worker that does not host the service runs its I/O thread as
// SCHED_BATCH, and the hosting worker's stays at the default policy.

#include <sched.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "actors/system_config.hpp"
#include "tests/runtime/runtime_checks.hpp"
#include "tests/runtime/worker_cluster.hpp"

namespace lifeboat::test {
namespace {

constexpr int workers = 3;

// The names of the threads of process `pid` that run as SCHED_BATCH.
std::vector<std::string> batch_threads_of(pid_t pid) {
  std::vector<std::string> out;
  for (auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    if (::sched_getscheduler(std::stoi(task.path().filename())) != SCHED_BATCH) continue;
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    out.push_back(name);
  }
  return out;
}

TEST(io_thread_policy_test, only_the_workers_that_do_not_host_the_service_run_batch) {
  temp_dir dir{"io-policy"};
  worker_cluster c{make_options(workers, dir.str(), {"--steps", "40", "--step-ms", "10"})};
  // Every worker is training, so every I/O thread has run its first events.
  for (int r = 0; r < workers; ++r) ASSERT_TRUE(c.wait_step(r, 2)) << c.transcript();
  // Rank 0 hosts the service: none of its threads runs as batch. Every other
  // worker has exactly one, its I/O thread (the trainer, the scheduler's
  // worker and the saver keep the default).
  EXPECT_TRUE(batch_threads_of(c.worker(0).pid()).empty());
  for (int r = 1; r < workers; ++r)
    EXPECT_EQ(batch_threads_of(c.worker(r).pid()), std::vector<std::string>{caf_thread_name})
        << "rank " << r;
  EXPECT_TRUE(all_exited(c.finish(), 0, workers)) << c.transcript();
}

}  // namespace
}  // namespace lifeboat::test
