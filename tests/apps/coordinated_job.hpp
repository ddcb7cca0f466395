#pragma once

// A job whose coordination service is a lifeboat-coordinator process and
// whose workers are lifeboat-demo processes started without a launcher, as
// a scheduler that starts each worker itself runs them (DESIGN
// "LIFEBOAT_COORDINATOR_EXTERNAL").

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/apps/app_test_support.hpp"
#include "tests/support/build_tree.hpp"

namespace lifeboat::test {

class coordinated_job {
 public:
  /// Starts the coordinator with `coordinator_flags` beside its port, world
  /// size and `token`; started() says whether it listens.
  coordinated_job(int workers, const std::string& token,
                  const std::vector<std::string>& coordinator_flags = {})
      : workers_(workers),
        token_(token),
        coordinator_(coordinator_argv(coordinator_flags), true),
        service_(coordinator_) {
    if (auto listening = service_.read_until("lifeboat-coordinator: listening on"))
      port_ = listening_port(*listening);
  }

  bool started() const { return port_ != 0; }

  /// Starts every worker: `steps` steps of `step_ms` saved under `ckpt`, with
  /// the environment of an external service and `env` beside it. Returns
  /// whether every one of them joined the service.
  bool start_workers(const std::string& ckpt, int64_t steps, int step_ms,
                     const std::map<std::string, std::string>& env = {}) {
    for (int rank = 0; rank < workers_; ++rank) {
      auto worker_env = external_service_worker(rank, workers_, port_, token_);
      worker_env.insert(env.begin(), env.end());
      procs_.push_back(std::make_unique<child_process>(
          demo_command(lifeboat::test::built(LIFEBOAT_DEMO), ckpt, steps, step_ms), true,
          environment_with(worker_env)));
      logs_.push_back(std::make_unique<output_log>(*procs_.back()));
    }
    return service_.read_until_count(" joined (generation ", workers_);
  }

  child_process& coordinator() { return coordinator_; }
  output_log& service() { return service_; }
  const std::vector<std::unique_ptr<child_process>>& workers() const { return procs_; }
  output_log& log(int rank) { return *logs_[static_cast<size_t>(rank)]; }

 private:
  std::vector<std::string> coordinator_argv(const std::vector<std::string>& flags) const {
    std::vector<std::string> argv{lifeboat::test::built(LIFEBOAT_COORDINATOR),
                                  "--port",
                                  "0",
                                  "--world-size",
                                  std::to_string(workers_),
                                  "--token",
                                  token_};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return argv;
  }

  int workers_;
  std::string token_;
  child_process coordinator_;
  output_log service_;
  uint16_t port_ = 0;
  std::vector<std::unique_ptr<child_process>> procs_;
  std::vector<std::unique_ptr<output_log>> logs_;
};

}  // namespace lifeboat::test
